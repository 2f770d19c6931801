# Session 32 round 6 (issue #6): the gated_delta suite against FLA 0.6.0 (same run; FLA's backward with its version gate
# bypassed, unverified) on all five rows with the narrow unfused dhu step (H16-1seq).
# Call (carry .whl): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s32_round6.sh
exec bash benchmarks/rounds/s24_round9.sh
