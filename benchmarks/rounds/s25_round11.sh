# Session 25 round 11 (issue #6): the gated_delta suite against FLA 0.6.0 (same run; FLA's backward with its version gate
# bypassed, unverified) on all five rows with this session's code (dhu's int32 slot index): the same command as
# session 24's round 9. Call (carry .whl): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s25_round11.sh
exec bash benchmarks/rounds/s24_round9.sh
