"""Launch rules of the gated delta kernels that the CPU interpreter cannot check by running them (shared
memory limits and Triton 3.6 miscompiles met by the GPU fuzz in session 9, each fixed by a launch choice).
These tests pin the choices; the device runs (benchmarks/rounds/s9_round*.sh) are what showed them needed."""

from __future__ import annotations

import os

import pytest
import torch

from jagattn.gated_delta.triton import chunk_bwd, chunk_gk, common


def test_wide_k_rows_get_one_stage_and_a_64_wide_v_block():
    # fp16 inputs at K=256 (q/k normalised in fp32: 1024-byte rows) needed 256-269 KB of shared memory in
    # fwd_o (BV=128) and bwd_dhu (two stages) on sm_90, over the 227 KB limit (OutOfResources on H200)
    for kernel in ("fwd_o", "bwd_dv_local"):
        assert common.launch_config(kernel, n_programs=64, v=256, k_row_bytes=256 * 4) == (64, 4, 1)
        assert common.launch_config(kernel, n_programs=64, v=256, k_row_bytes=256 * 2) == (128, 4, 2)
    for kernel in ("fwd_h", "bwd_h", "bwd_dhu"):
        for n in (4, 1000):
            assert common.launch_config(kernel, n_programs=n, v=128, k_row_bytes=256 * 4)[2] == 1
        assert common.launch_config(kernel, n_programs=1000, v=128, k_row_bytes=128 * 4)[2] == 2


@pytest.mark.parametrize("chains, v, config", [(16, 128, (16, 4, 3)), (64, 128, (32, 4, 2)), (128, 128, (64, 4, 2)),
                                                (8, 32, (16, 4, 3)), (1000, 32, (32, 4, 2)), (1000, 16, (16, 4, 3))])  # fmt: skip
def test_state_pass_v_block_fills_the_gpu_once(monkeypatch, chains, v, config):
    # both state passes: the widest V block (<= 64, >= 16, <= V rounded up) with at least one program per
    # SM; V blocks of 16 take three stages (H200, session 12: fwd_h 1.5x, the backward 4% on H16-1seq;
    # bwd_dhu 6% faster at BV 64 than 32 on H16-8seqs, 128 chains)
    monkeypatch.setattr(common, "_num_sms", lambda index: 132)
    for kernel in ("fwd_h", "bwd_h", "bwd_dhu"):
        assert common.launch_config(kernel, n_programs=chains, v=v, k_row_bytes=256) == config
        # fp32 states or q/k at K=128 (512-byte rows): two stages (three need 287 KB in bwd_dhu on sm_90),
        # and bwd_dhu at most 32 wide (263-271 KB at 64: OutOfResources for fp16 on the H200)
        bv = min(config[0], 32) if kernel == "bwd_dhu" else config[0]
        assert common.launch_config(kernel, n_programs=chains, v=v, k_row_bytes=512) == (bv, config[1], 2)


def test_gk_launch_blocks_avoid_the_small_tiles_that_crashed():
    # dk=16 (WY column tile 16) and dv=16 with K=128 (state-pass V block 16): invalid shared reads on H200
    assert chunk_gk.WY_BC_MIN >= 32 and chunk_gk.BV_SEQ >= 32


@pytest.mark.parametrize("mode, chains, fused", [("auto", 16, False), ("auto", 128, True), ("0", 128, False),
                                                  ("1", 16, True), (True, 1, True), (False, 1000, False)])  # fmt: skip
def test_fuse_dv_choice(monkeypatch, mode, chains, fused):
    # auto: fused when the state pass has at least half as many (sequence, head) chains as SMs (132 without
    # a GPU): H16 x 1 sequence was slower fused on H200, 8 x 16 heads and more faster
    monkeypatch.setattr(chunk_bwd, "FUSE_DV", mode)
    monkeypatch.setattr(common, "_num_sms", lambda index: 132)
    monkeypatch.setattr(chunk_bwd, "_num_sms", lambda index: 132)
    assert chunk_bwd._fuse_dv(chains, torch.device("cpu")) is fused


def test_fuse_dv_auto_is_off_for_a_symbolic_batch(monkeypatch):
    monkeypatch.setattr(chunk_bwd, "FUSE_DV", "auto")
    assert chunk_bwd._fuse_dv(object(), torch.device("cpu")) is False


def test_bf16_fp32_intermediates_switch():
    assert common._fp32_set("") == frozenset()
    assert common._fp32_set("h, vnew") == {"h", "vnew"}
    assert common._fp32_set("all") == set(common.BF16_INTERMEDIATES)
    with pytest.raises(ValueError, match="JAGATTN_GD_BF16_FP32"):
        common._fp32_set("h,state")
    big = common.PRECISE_MAX_TOKENS + 1
    assert common.inter_dtype(torch.bfloat16, "h", big, 1) == torch.bfloat16  # default: bf16 intermediates
    assert common.inter_dtype(torch.float16, "h", big, 1) == torch.float32


def test_bf16_precise_path_by_size(monkeypatch):
    """bf16 inputs up to PRECISE_MAX_TOKENS tokens and PRECISE_MAX_TOKEN_HEADS tokens x value heads take
    fp32 intermediates (but q/k) and KEEP in every kernel ("auto"); "on" / "off" force either path;
    fp16/fp32 inputs are never affected."""
    t_max, th_max = common.PRECISE_MAX_TOKENS, common.PRECISE_MAX_TOKEN_HEADS
    monkeypatch.setattr(common, "BF16_PRECISE", "auto")
    monkeypatch.setattr(common, "BF16_FP32", frozenset())
    monkeypatch.setattr(common, "BF16_KEEP", frozenset())
    bf = torch.bfloat16
    hv = th_max // t_max  # both limits reached at once
    assert common.bf16_precise(bf, t_max, hv)
    assert not common.bf16_precise(bf, t_max + 1, 1)  # one long sequence: the speed path
    assert not common.bf16_precise(bf, t_max, hv + 1)
    assert not common.bf16_precise(torch.float16, 1, 1) and not common.bf16_precise(torch.float32, 1, 1)
    for what in common.BF16_INTERMEDIATES:  # normalised q/k stay bf16 (fp32 ones take the fp16 path)
        assert common.inter_dtype(bf, what, t_max, hv) == (bf if what == "qk" else torch.float32)
        assert common.inter_dtype(bf, what, t_max + 1, 1) == bf
    for kernel in common.KEEP_KERNELS:
        assert common.keep_fp32(bf, kernel, 1, 1) and not common.keep_fp32(bf, kernel, t_max + 1, 1)
        assert not common.keep_fp32(torch.float16, kernel, 1, 1)  # fp16 keeps fp32 through DOT_PREC (tf32x3)
    with pytest.raises(KeyError):
        common.keep_fp32(bf, "fwd_x", 1, 1)
    monkeypatch.setattr(common, "BF16_PRECISE", "off")
    assert not common.bf16_precise(bf, 1, 1) and common.inter_dtype(bf, "h", 1, 1) == bf
    monkeypatch.setattr(common, "BF16_PRECISE", "on")
    assert common.bf16_precise(bf, 10**6, 64) and common.keep_fp32(bf, "wy", 10**6, 64)
    monkeypatch.setattr(common, "BF16_PRECISE", "off")
    monkeypatch.setattr(common, "BF16_KEEP", common._keep_set("dhu, wy"))
    assert common.keep_fp32(bf, "wy", 1, 1) and not common.keep_fp32(bf, "dqkwg", 1, 1)
    assert common._keep_set("all") == set(common.KEEP_KERNELS)
    with pytest.raises(ValueError, match="JAGATTN_GD_BF16_KEEP"):
        common._keep_set("dhu,fwd")


def test_fp16_tf32_products_switch(monkeypatch):
    """fp16 takes split-tf32 products by default (fp32 operands kept through DOT_PREC, no KEEP);
    JAGATTN_GD_FP16_DOT=ieee exact ones, =tf32 tf32 ones with KEEP in every kernel (fp32 operands stay
    fp32); bf16 and fp32 inputs are unaffected."""
    if not os.environ.get("JAGATTN_GD_FP16_DOT"):
        assert common.FP16_DOT == "tf32x3"
        assert common.dot_precision(torch.float16) == "tf32x3"
        assert not any(common.keep_fp32(torch.float16, kern, 1, 1) for kern in common.KEEP_KERNELS)
    monkeypatch.setattr(common, "BF16_PRECISE", "off")
    monkeypatch.setattr(common, "BF16_KEEP", frozenset())
    monkeypatch.setattr(common, "FP16_DOT", "ieee")
    assert common.dot_precision(torch.float16) == "ieee" and not common.keep_fp32(torch.float16, "wy", 1, 1)
    monkeypatch.setattr(common, "FP16_DOT", "tf32")
    assert common.dot_precision(torch.float16) == "tf32"
    assert all(common.keep_fp32(torch.float16, kern, 10**6, 64) for kern in common.KEEP_KERNELS)
    assert common.dot_precision(torch.float32) == "ieee" and not common.keep_fp32(torch.float32, "wy", 1, 1)
    assert common.dot_precision(torch.bfloat16) == common.BF16_DOT
    assert not common.keep_fp32(torch.bfloat16, "wy", 10**6, 64)


def test_fp16_half_path_switch(monkeypatch):
    """JAGATTN_GD_FP16_PATH=half sends fp16 through bf16's speed structure: fp16 intermediates, tf32
    for the remaining fp32 operands, no KEEP; bf16 and fp32 are unaffected."""
    f16 = torch.float16
    monkeypatch.setattr(common, "FP16_PATH", "half")
    monkeypatch.setattr(common, "FP16_DOT", "tf32")  # KEEP stays off on the half path even so
    assert common.dot_precision(f16) == "tf32"
    assert all(common.inter_dtype(f16, w, 10**6, 64) == f16 for w in common.BF16_INTERMEDIATES)
    assert not any(common.keep_fp32(f16, kern, 1, 1) for kern in common.KEEP_KERNELS)
    assert common.inter_dtype(torch.float32, "h", 1, 1) == torch.float32
    monkeypatch.setattr(common, "FP16_PATH", "split")
    assert all(common.inter_dtype(f16, w, 1, 1) == torch.float32 for w in common.BF16_INTERMEDIATES)


def test_fp16_tf32_per_kernel_switch(monkeypatch):
    """JAGATTN_GD_FP16_TF32 names fp16 kernels that take tf32 products (with KEEP) instead of the
    split-tf32 default; the others and every other dtype are unaffected."""
    f16 = torch.float16
    monkeypatch.setattr(common, "FP16_PATH", "split")
    monkeypatch.setattr(common, "FP16_DOT", "tf32x3")
    monkeypatch.setattr(common, "FP16_TF32", frozenset({"dqkwg", "kkt"}))
    assert common.dot_precision(f16, "dqkwg") == "tf32" and common.dot_precision(f16, "kkt") == "tf32"
    assert common.dot_precision(f16, "dhu") == "tf32x3" and common.dot_precision(f16) == "tf32x3"
    assert common.keep_fp32(f16, "dqkwg", 1, 1) and not common.keep_fp32(f16, "dhu", 1, 1)
    assert common.dot_precision(torch.float32, "dqkwg") == common.FP32_DOT
    with pytest.raises(ValueError, match="JAGATTN_GD_FP16_TF32"):
        common._name_set("JAGATTN_GD_FP16_TF32", "dqkwg,fwd", common.FP16_TF32_KERNELS)


def test_gk_state_passes_take_one_stage_for_split_tf32_at_k128():
    # fp16 with gk at K=V=128: the split-tf32 (fp16's "tf32x3") gk state passes needed 242 KB of shared
    # memory at two stages on the H200 (OutOfResources for every such batch until session 13)
    assert chunk_gk._seq_stages(128, "tf32x3") == 1
    assert chunk_gk._seq_stages(64, "tf32x3") == 2
    assert chunk_gk._seq_stages(128, "tf32") == 2
    assert chunk_gk._seq_stages(256, "tf32") == 1


_SHARED_CHECK = os.path.join(
    os.path.dirname(os.path.dirname(__file__)), "benchmarks", "gated_delta_shared_check.py"
)
_PTXAS = os.path.join(os.path.dirname(__import__("triton").__file__), "backends", "nvidia", "bin", "ptxas")


@pytest.mark.skipif(
    not os.path.exists(_PTXAS), reason="no ptxas in the Triton install: cannot compile for sm_90"
)
@pytest.mark.parametrize("extra", [[], ["--seqs", "140"]], ids=["few-chains", "many-chains"])
def test_fp16_k128_kernels_fit_sm90_shared_memory(extra):
    # every kernel of the chunked forward and backward, scalar gate and gk, compiled for sm_90 with the
    # local Triton (no GPU: benchmarks/gated_delta_shared_check.py's stub driver) at fp16 K=V=128, where
    # the launch rules met the 227 KB limit twice (bwd_dhu at BV 64 in session 12, the gk state passes in
    # session 13); few chains take the narrowest V blocks, 140 x 2 the widest. A screen: the local Triton
    # allocates within a few KB of the device's 3.6 (238 vs 242 KB for the gk dhu that crashed).
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    src = os.path.join(os.path.dirname(os.path.dirname(__file__)), "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, _SHARED_CHECK, "--dims", "128,128", "--dtype", "fp16", *extra]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, (r.stdout[-4000:], r.stderr[-4000:])
    assert "0 over" in r.stdout


@pytest.mark.parametrize(
    "mode, stages", [("off", ()), ("fwd", ("fwd_h",)), ("state", ("fwd_h", "bwd_h")), ("all", ("fwd_h", "bwd_h", "bwd_dhu"))]
)  # fmt: skip
def test_fuse_wu_only_the_modes_stages_and_only_at_v_blocks_of_64(monkeypatch, mode, stages):
    # chunk_fwd.fuse_wu: the stages FUSE_WU names, only where the pass runs V blocks of 64: 128 chains on 132
    # SMs do (H16-8seqs); 16 chains run V blocks of 16 (H16-1seq) and stay unfused, as do a symbolic chain
    # count (compile with dynamic shapes: V blocks of 32), a value head dim under 64 and K = 256. Fused at 32 / 16
    # the pass miscompiled on Triton 3.6 (NaN o, illegal address: session 22 round 7)
    from jagattn.gated_delta.triton import chunk_fwd

    monkeypatch.setattr(common, "_num_sms", lambda index: 132)
    monkeypatch.setattr(chunk_fwd, "FUSE_WU", mode)
    for stage in ("fwd_h", "bwd_h", "bwd_dhu"):
        assert chunk_fwd.fuse_wu(stage, 128, 128, 128, 256) == (stage in stages)
        assert chunk_fwd.fuse_wu(stage, 128, 128, 64, 128) == (stage in stages)
        assert not chunk_fwd.fuse_wu(stage, 128, 128, 256, 512)  # K = 256: not run fused on the GPU
        assert not chunk_fwd.fuse_wu(stage, 16, 128, 128, 256)
        assert not chunk_fwd.fuse_wu(stage, 1000, 32, 128, 256)
        assert not chunk_fwd.fuse_wu(stage, object(), 128, 128, 256)  # not an int: a symbolic chain count


def test_fuse_o_rule(monkeypatch):
    # chunk_fwd.fuse_o: only where the forward's pass runs V blocks of 64 (128 chains x V 128 on 132 SMs: yes;
    # 16 chains: no),
    # K <= 128 and K rows of at most 256 bytes (bf16 at K = 128: yes; fp32 copies at K = 128: no), never "off"
    from jagattn.gated_delta.triton import chunk_fwd, common

    monkeypatch.setattr(common, "_num_sms", lambda index: 132)
    assert chunk_fwd.fuse_o(128, 128, 128, 256)
    assert chunk_fwd.fuse_o(264, 64, 64, 128)  # V = 64: two V blocks of 32 on 128 chains, one of 64 on 264
    assert not chunk_fwd.fuse_o(16, 128, 128, 256)
    assert not chunk_fwd.fuse_o(128, 128, 128, 512)
    assert not chunk_fwd.fuse_o(128, 128, 256, 512)
    assert not chunk_fwd.fuse_o(object(), 128, 128, 256)  # a symbolic chain count
    monkeypatch.setattr(chunk_fwd, "FUSE_O", "off")
    assert not chunk_fwd.fuse_o(128, 128, 128, 256)


def test_fuse_o_max_len(monkeypatch):
    # chunk_fwd.fuse_o_max_len: FUSE_O_MAX_MEAN x the mean length, rounded up (equal lengths always fused, also
    # when the total does not divide: the longer ones are within the rounding), -1 for symbolic shapes
    from jagattn.gated_delta.triton import chunk_fwd

    monkeypatch.setattr(chunk_fwd, "FUSE_O_MAX_MEAN", 1.0)
    assert chunk_fwd.fuse_o_max_len(32768, 8) == 4096
    assert chunk_fwd.fuse_o_max_len(32769, 8) == 4097
    assert chunk_fwd.fuse_o_max_len(32768, 0) == 32768
    assert chunk_fwd.fuse_o_max_len(object(), 8) == -1
    monkeypatch.setattr(chunk_fwd, "FUSE_O_MAX_MEAN", 1.5)
    assert chunk_fwd.fuse_o_max_len(32768, 7) == 7022


def test_dqkwg_narrow_row_config_rule(monkeypatch):
    # session 35 (H200 rounds 6-7): (64, 4, 2, 64) for K rows of at most 256 bytes, the first candidate otherwise
    # (and when the caller passes no row size); JAGATTN_GD_CONFIG still wins
    monkeypatch.setattr(common, "CONFIG_OVERRIDE", {})
    first = common.CANDIDATES["bwd_dqkwg"][0]
    assert common.DQKWG_NARROW_ROWS in common.CANDIDATES["bwd_dqkwg"] and first != common.DQKWG_NARROW_ROWS
    assert (
        common.launch_config("bwd_dqkwg", n_programs=99, v=128, k_row_bytes=256) == common.DQKWG_NARROW_ROWS
    )
    assert common.launch_config("bwd_dqkwg", n_programs=99, v=128, k_row_bytes=512) == first
    assert common.launch_config("bwd_dqkwg", n_programs=99, v=128) == first
    monkeypatch.setitem(common.CONFIG_OVERRIDE, "bwd_dqkwg", (32, 8, 3, 64))
    assert common.launch_config("bwd_dqkwg", n_programs=99, v=128, k_row_bytes=256) == (32, 8, 3, 64)


@pytest.mark.parametrize(
    "dtype, precise, narrow",
    [(torch.bfloat16, False, True), (torch.bfloat16, True, False), (torch.float16, False, False),
     (torch.float32, False, False)],
    ids=["bf16-speed", "bf16-precise", "fp16", "fp32"],
)  # fmt: skip
def test_dqkwg_narrow_rows_only_for_16_bit_copies_and_states(monkeypatch, dtype, precise, narrow):
    # chunk_bwd passes launch_config 16-bit rows only when the q/k copies and the states are both 16-bit (the bf16
    # speed path, the only one the device measured): fp32 at K = 32 (128-byte rows) must keep the first candidate.
    # The kernels are stubbed (the interpreter returns at once): only the launch decisions run
    import triton.runtime.interpreter as interpreter

    monkeypatch.setattr(interpreter.InterpretedFunction, "run", lambda self, *a, **kw: None)
    monkeypatch.setattr(common, "PRECISE_MAX_TOKEN_HEADS", 1 << 30 if precise else 0)
    seen = []
    launch_config = chunk_bwd.launch_config

    def spy(kernel, **kw):
        cfg = launch_config(kernel, **kw)
        if kernel == "bwd_dqkwg":
            seen.append(cfg)
        return cfg

    monkeypatch.setattr(chunk_bwd, "launch_config", spy)
    gen = torch.Generator().manual_seed(0)
    t, h, dk, dv = 130, 2, 32, 48
    q, k = (torch.randn(t, h, dk, generator=gen).to(dtype) for _ in range(2))
    v, do = (torch.randn(t, h, dv, generator=gen).to(dtype) for _ in range(2))
    g = torch.nn.functional.logsigmoid(torch.randn(t, h, generator=gen))
    beta = torch.rand(t, h, generator=gen).to(dtype)
    cu = torch.tensor([0, 63, 130])
    chunk_bwd.chunk_bwd(q, k, v, g, beta, None, cu, dk**-0.5, do, None)
    first = common.CANDIDATES["bwd_dqkwg"][0]
    assert seen == [common.DQKWG_NARROW_ROWS if narrow else first]


def test_candidates_leave_out_the_triton36_hopper_miscompile_patterns():
    # Configs that gave wrong results on Triton 3.6 / H200 (no error) stay out of CANDIDATES, which launch_config and
    # the sweeps draw from (JAGATTN_GD_CONFIG warns outside them): a narrow right operand next to a [BT, BT] score or
    # T tile at 4 warps (the notes above CANDIDATES in common.py): fwd_o / bwd_dv_local BV 16 / 32; fwd_wu / bwd_wy
    # column tiles under 64 (T in bf16 as the left operand); bwd_dqkwg key blocks under 64 at 4 warps only as
    # (32, 4, 1, 32), no V block under 32 (the forced (16, 4, 1, 16): dk 0.57 off against gold rms 0.19 on the H200,
    # session 54); fwd_h_o (the fused output) V 64 only
    c = common.CANDIDATES
    for kernel in ("fwd_o", "bwd_dv_local"):
        assert all(bv >= 64 for bv, _, _ in c[kernel]), kernel
    for kernel in ("fwd_wu", "bwd_wy"):
        assert all(bc >= 64 or warps > 4 for bc, warps, _ in c[kernel]), kernel
    narrow = [cfg for cfg in c["bwd_dqkwg"] if cfg[3] < 64 and cfg[1] <= 4]
    assert narrow == [(32, 4, 1, 32)]
    assert all(bv >= 32 for bv, *_ in c["bwd_dqkwg"])
    assert {bv for bv, *_ in c["fwd_h_o"]} == {64}
