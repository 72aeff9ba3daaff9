"""64- and 128-bit loads and stores for generated kernels.

Numba has no vector memory types, so a ``vectorize``d loop whose lanes touch
consecutive, aligned elements is emitted as one call of these helpers:

    a0, a1, a2, a3 = _load4(A, base)        # ld.global.v4.f32 / ld.shared.v4.f32
    _store4(S, base, a0, a1, a2, a3)        # st.shared.v4.f32

On the GPU they are LLVM intrinsics that bitcast the element pointer to a vector
pointer with the vector's alignment; the code generator only emits them when it
has proved ``base`` a multiple of the width, and the runtime checks that global
arguments start on a 16-byte boundary. In the simulator they are plain Python.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.cuda.extending import intrinsic


def _element_pointer(context, builder, array_type, array, index):
    ary = context.make_array(array_type)(context, builder, array)
    offset = builder.zext(index, ir.IntType(64)) if index.type.width < 64 else index
    return builder.gep(ary.data, [offset])


def _vector_pointer(context, builder, array_type, array, index, width):
    element = context.get_data_type(array_type.dtype)
    ptr = _element_pointer(context, builder, array_type, array, index)
    return builder.bitcast(ptr, ir.VectorType(element, width).as_pointer())


def _make_load(width: int):
    def load(typingctx, array, index):
        sig = types.UniTuple(array.dtype, width)(array, index)

        def codegen(context, builder, signature, args):
            array_type = signature.args[0]
            nbytes = context.get_abi_sizeof(context.get_data_type(array_type.dtype)) * width
            vptr = _vector_pointer(context, builder, array_type, args[0], args[1], width)
            vector = builder.load(vptr, align=nbytes)
            lanes = [builder.extract_element(vector, ir.Constant(ir.IntType(32), n)) for n in range(width)]
            return context.make_tuple(builder, signature.return_type, lanes)

        return sig, codegen

    load.__name__ = f"load{width}"
    return intrinsic(load)


def _store_codegen(width: int):
    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        element = context.get_data_type(array_type.dtype)
        nbytes = context.get_abi_sizeof(element) * width
        vptr = _vector_pointer(context, builder, array_type, args[0], args[1], width)
        vector = ir.Constant(ir.VectorType(element, width), ir.Undefined)
        for n in range(width):
            value = context.cast(builder, args[2 + n], signature.args[2 + n], array_type.dtype)
            vector = builder.insert_element(vector, value, ir.Constant(ir.IntType(32), n))
        builder.store(vector, vptr, align=nbytes)
        return context.get_dummy_value()

    return codegen


@intrinsic
def store2(typingctx, array, index, a, b):
    return types.void(array, index, a, b), _store_codegen(2)


@intrinsic
def store4(typingctx, array, index, a, b, c, d):
    return types.void(array, index, a, b, c, d), _store_codegen(4)


load2, load4 = _make_load(2), _make_load(4)


def sim_load2(array, index):
    return array[index], array[index + 1]


def sim_load4(array, index):
    return array[index], array[index + 1], array[index + 2], array[index + 3]


def sim_store2(array, index, a, b):
    array[index], array[index + 1] = a, b


def sim_store4(array, index, a, b, c, d):
    array[index], array[index + 1], array[index + 2], array[index + 3] = a, b, c, d

