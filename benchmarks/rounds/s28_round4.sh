# Session 28 round 4 (issue #6): the gated_delta suite against FLA 0.6.0 (same run; FLA's backward with its version gate
# bypassed, unverified) on all five rows with the segment-parallel recompute (auto: H16-1seq only).
# Call (carry .whl): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s28_round4.sh
exec bash benchmarks/rounds/s24_round9.sh
