# Session 19 round 10 (issue #4): round 9 again (the attention forward's lazy-rescale A/B,
# benchmarks/rounds/s19_round9_variants.py), after fixing src_variant_ab.py, which in round 9 missed the
# autotuner-wrapped forward kernel (the variant never applied: outputs bitwise the default's).
# Call (kind nvidia-h100-x1): JAGATTN_GIT_SHA=<sha> bash benchmarks/rounds/s19_round10.sh
exec bash benchmarks/rounds/s19_round9.sh
