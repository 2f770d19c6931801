# Session 31 round 7 (issue #5): the hstu suite against generative-recommenders' Triton HSTU twice in one call, as round
# 5 (the same commands), now with the Gluon dQ kernel on windows (ctx6) and the Gluon dK/dV kernel's size rule.
# Call: JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s31_round7.sh   (carry peers)
exec bash benchmarks/rounds/s31_round5.sh "$@"
