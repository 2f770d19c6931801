"""Launch rules of the gated delta kernels that the CPU interpreter cannot check by running them (shared
memory limits and Triton 3.6 miscompiles met by the GPU fuzz in session 9, each fixed by a launch choice).
These tests pin the choices; the device runs (benchmarks/s9_round*.sh) are what showed them needed."""

from __future__ import annotations

import pytest
import torch

from jagattn.gated_delta.triton import chunk_bwd, chunk_gk, common


def test_wide_k_rows_get_one_stage_and_a_64_wide_v_block():
    # fp16 inputs at K=256 (q/k normalised in fp32: 1024-byte rows) needed 256-269 KB of shared memory in
    # fwd_o (BV=128) and bwd_dhu (two stages) on sm_90, over the 227 KB limit (OutOfResources on H200)
    for kernel in ("fwd_o", "bwd_dv_local"):
        assert common.launch_config(kernel, n_programs=64, v=256, k_row_bytes=256 * 4) == (64, 4, 1)
        assert common.launch_config(kernel, n_programs=64, v=256, k_row_bytes=256 * 2) == (128, 4, 2)
    for kernel in ("fwd_h", "bwd_dhu"):
        for n in (4, 1000):
            assert common.launch_config(kernel, n_programs=n, v=128, k_row_bytes=256 * 4)[2] == 1
            assert common.launch_config(kernel, n_programs=n, v=128, k_row_bytes=128 * 4)[2] == 2


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
    assert common.inter_dtype(torch.bfloat16, "h") == torch.bfloat16  # default: bf16 intermediates
    assert common.inter_dtype(torch.float16, "h") == torch.float32
