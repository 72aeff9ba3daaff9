"""Conversions between float32 registers and 16/8-bit float storage on the GPU.

Generated kernels keep narrow floats in registers as float32 and store them as bit
patterns (bfloat16 and float16 as uint16, float8_e4m3 as uint8).
Each conversion is one or two PTX instructions, written here as Numba intrinsics
so that kernels stay free of NVRTC-linked helper calls and can be cached on disk:

    load_bfloat16(bits)      uint16 -> float32      shift into the high half
    store_bfloat16(x)        float32 -> uint16      cvt.rn.bf16.f32 (nearest even)
    load_float16(bits)       uint16 -> float32      cvt.f32.f16
    store_float16(x)         float32 -> uint16      cvt.rn.f16.f32
    load_float8_e4m3(bits)   uint8 -> float32       cvt.rn.f16x2.e4m3x2, cvt.f32.f16
    store_float8_e4m3(x)     float32 -> uint8       cvt.rn.satfinite.e4m3x2.f32 (to +-448)
    round_<dtype>(x)         float32 -> float32     the value after a round trip

The simulator versions (``sim_*``) compute the same with ml_dtypes.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from llvmlite import ir
from numba import float32, types, uint8, uint16
from numba.cuda.extending import intrinsic

_I8, _I16, _I32, _F32 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.FloatType()


def _as_float32(context, builder, value, typ):
    return context.cast(builder, value, typ, types.float32)


def _as_int(builder, value, width: int):
    if value.type.width > width:
        return builder.trunc(value, ir.IntType(width))
    if value.type.width < width:
        return builder.zext(value, ir.IntType(width))
    return value


def _asm(builder, ret, args, text: str, constraints: str, side_effect: bool = False):
    """One inline-PTX instruction returning ``ret`` (``ir.VoidType()`` for none)."""
    fn = ir.FunctionType(ret, [a.type for a in args])
    return builder.call(ir.InlineAsm(fn, text, constraints, side_effect=side_effect), args)


# ---------------------------------------------------------------------------- IR builders

def _bf16_to_f32(builder, bits16):
    wide = builder.zext(bits16, _I32)
    return builder.bitcast(builder.shl(wide, ir.Constant(_I32, 16)), _F32)


def _f32_to_bf16(builder, x):
    return _asm(builder, _I16, [x], "cvt.rn.bf16.f32 $0, $1;", "=h,f")


def _f32_to_f16(builder, x):
    return _asm(builder, _I16, [x], "cvt.rn.f16.f32 $0, $1;", "=h,f")


def _f16_to_f32(builder, bits16):
    return _asm(builder, _F32, [bits16], "cvt.f32.f16 $0, $1;", "=f,h")


def _e4m3_to_f32(builder, bits8):
    text = ("{ .reg .b32 pair; .reg .b16 lo, hi; cvt.rn.f16x2.e4m3x2 pair, $1; "
            "mov.b32 {lo, hi}, pair; cvt.f32.f16 $0, lo; }")
    return _asm(builder, _F32, [builder.zext(bits8, _I16)], text, "=f,h")


def _f32_to_e4m3(builder, x):
    # the second source goes to the low byte of the pair
    pair = _asm(builder, _I16, [ir.Constant(_F32, 0.0), x], "cvt.rn.satfinite.e4m3x2.f32 $0, $1, $2;", "=h,f,f")
    return builder.trunc(pair, _I8)


# ---------------------------------------------------------------------------- intrinsics

def _conversion(result, convert, from_bits: int | None = None):
    """An intrinsic of one argument: the float32 value (or, with ``from_bits``, the bit
    pattern of that width) handed to the IR builder ``convert``."""

    def conversion(typingctx, x):
        def codegen(context, builder, sig, args):
            if from_bits is None:
                value = _as_float32(context, builder, args[0], sig.args[0])
            else:
                value = _as_int(builder, args[0], from_bits)
            return convert(builder, value)

        return result(x), codegen

    return intrinsic(conversion)


load_bfloat16 = _conversion(types.float32, _bf16_to_f32, from_bits=16)
store_bfloat16 = _conversion(types.uint16, _f32_to_bf16)
round_bfloat16 = _conversion(types.float32, lambda b, x: _bf16_to_f32(b, _f32_to_bf16(b, x)))
load_float16 = _conversion(types.float32, _f16_to_f32, from_bits=16)
store_float16 = _conversion(types.uint16, _f32_to_f16)
round_float16 = _conversion(types.float32, lambda b, x: _f16_to_f32(b, _f32_to_f16(b, x)))
load_float8_e4m3 = _conversion(types.float32, _e4m3_to_f32, from_bits=8)
store_float8_e4m3 = _conversion(types.uint8, _f32_to_e4m3)
round_float8_e4m3 = _conversion(types.float32, lambda b, x: _e4m3_to_f32(b, _f32_to_e4m3(b, x)))


# ---------------------------------------------------------------------------- simulator

def _saturate_e4m3(x):
    return np.float32(min(max(x, float32(-448.0)), float32(448.0)))


def sim_round_bfloat16(x):
    return float32(np.float32(x).astype(ml_dtypes.bfloat16))


def sim_round_float16(x):
    return float32(np.float16(x))


def sim_round_float8_e4m3(x):
    return float32(_saturate_e4m3(x).astype(ml_dtypes.float8_e4m3fn))


def sim_load_bfloat16(bits):
    return float32(np.uint16(bits).view(ml_dtypes.bfloat16))


def sim_store_bfloat16(x):
    return uint16(np.float32(x).astype(ml_dtypes.bfloat16).view(np.uint16))


def sim_load_float16(bits):
    return float32(np.uint16(bits).view(np.float16))


def sim_store_float16(x):
    return uint16(np.float16(x).view(np.uint16))


def sim_load_float8_e4m3(bits):
    return float32(np.uint8(bits).view(ml_dtypes.float8_e4m3fn))


def sim_store_float8_e4m3(x):
    return uint8(_saturate_e4m3(x).astype(ml_dtypes.float8_e4m3fn).view(np.uint8))
