"""Session 19 round 12 variant for ``benchmarks/src_variant_ab.py --family attention`` (issue #4): ``no_tma``, the
forward's pointer loads of K/V (``fwd.FWD_TMA = "0"``) against the default TMA descriptor loads (``fwd.use_tma``)."""


def _no_tma():
    from jagattn.attention.triton import fwd

    def enter():
        fwd.FWD_TMA = "0"

    def leave():
        fwd.FWD_TMA = "auto"

    return [(enter, leave)]


VARIANTS = {"no_tma": _no_tma()}
