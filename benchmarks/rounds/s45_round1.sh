# Session 45 round 1: the first 22 lines of s44_next_round.sh (its replay tests, decode host times and CUDA-graph
# tests; the clock part ran as round 2), then the elapsed time. Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s45_round1.sh
head -22 "$(dirname "$0")/s44_next_round.sh" > /tmp/s45_round1_body.sh
echo 'echo "elapsed $((SECONDS - T0)) s"' >> /tmp/s45_round1_body.sh
bash /tmp/s45_round1_body.sh
