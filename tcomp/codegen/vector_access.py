"""Vector loads and stores (up to 128 bits) for generated kernels.

Numba has no vector memory types, so a ``vectorize``d loop whose lanes touch
consecutive, aligned elements is emitted as one call of these helpers:

    a0, a1, a2, a3 = _load4(A, base)        # ld.global.v4.f32 / ld.shared.v4.f32
    _store4(S, base, (a0, a1, a2, a3))      # st.shared.v4.f32

The lanes are elements of the array's storage type: eight bfloat16 lanes are eight
uint16 bit patterns in one 16-byte access, sixteen int8 lanes one 16-byte store.
On the GPU they are LLVM intrinsics that bitcast the element pointer to a vector
pointer with the vector's alignment; the code generator only emits them when it
has proved ``base`` a multiple of the width, and the runtime checks that global
arguments start on a boundary of the access's bytes. In the simulator they are plain
Python.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.cuda.extending import intrinsic

from ..target.storage import VECTOR_WIDTHS


def _element_pointer(context, builder, array_type, array, index):
    return _offset_pointer(builder, _data_pointer(context, builder, array_type, array), index)


def _data_pointer(context, builder, array_type, array):
    """The pointer to element 0 of a numba array value (its struct's ``data``). Making
    the struct's proxy costs about a millisecond of compile time: an intrinsic that
    addresses many elements of one array takes it once."""
    return context.make_array(array_type)(context, builder, array).data


def _offset_pointer(builder, data, index):
    """``data`` advanced by ``index`` elements."""
    offset = builder.zext(index, ir.IntType(64)) if index.type.width < 64 else index
    return builder.gep(data, [offset])


def _access_type(element, width: int, nbytes: int):
    """The type a vector of ``width`` ``element``s travels as: itself for 32-bit
    elements; for narrower ones whole 32-bit words (PTX has no eight-lane vectors, and
    NVPTX would split eight 16-bit lanes into two 64-bit accesses), or one integer of
    the vector's bits when it is smaller than 8 bytes."""
    if not _is_narrow(element):
        return ir.VectorType(element, width)
    if nbytes >= 8:
        return ir.VectorType(ir.IntType(32), nbytes // 4)
    return ir.IntType(8 * nbytes)


def _is_narrow(element) -> bool:
    return isinstance(element, ir.IntType) and element.width < 32


def _access_pointer(context, builder, array_type, array, index, width):
    """A pointer to the vector at element ``index`` of ``array``, its element type and
    its bytes."""
    element = context.get_data_type(array_type.dtype)
    nbytes = context.get_abi_sizeof(element) * width
    access = _access_type(element, width, nbytes)
    ptr = _element_pointer(context, builder, array_type, array, index)
    return builder.bitcast(ptr, access.as_pointer()), access, element, nbytes


def _words(builder, value) -> list:
    if isinstance(value.type, ir.VectorType):
        return [builder.extract_element(value, ir.Constant(ir.IntType(32), n)) for n in range(value.type.count)]
    return [value]


def _unpack(builder, loaded, element, width: int) -> list:
    """The lanes of a loaded vector; narrow lanes are cut out of their words with shifts
    (a bitcast would let LLVM fold the load back into one of narrow lanes)."""
    if not _is_narrow(element):
        return _words(builder, loaded)
    lanes = []
    for word in _words(builder, loaded):
        for n in range(word.type.width // element.width):
            lanes.append(builder.trunc(builder.lshr(word, ir.Constant(word.type, n * element.width)), element))
    return lanes


def _pack(builder, lanes: list, access, element):
    """The vector of type ``access`` holding ``lanes`` (lane 0 in the lowest bits)."""
    if not _is_narrow(element):
        words, word_type = lanes, element
    else:
        word_type = access.element if isinstance(access, ir.VectorType) else access
        per_word = word_type.width // element.width
        words = []
        for start in range(0, len(lanes), per_word):
            word = ir.Constant(word_type, 0)
            for n, lane in enumerate(lanes[start:start + per_word]):
                shifted = builder.shl(builder.zext(lane, word_type), ir.Constant(word_type, n * element.width))
                word = builder.or_(word, shifted)
            words.append(word)
    if not isinstance(access, ir.VectorType):
        return words[0]
    vector = ir.Constant(access, ir.Undefined)
    for n, word in enumerate(words):
        vector = builder.insert_element(vector, word, ir.Constant(ir.IntType(32), n))
    return vector


def _make_load(width: int):
    def load(typingctx, array, index):
        sig = types.UniTuple(array.dtype, width)(array, index)

        def codegen(context, builder, signature, args):
            ptr, _, element, nbytes = _access_pointer(context, builder, signature.args[0], args[0], args[1], width)
            lanes = _unpack(builder, builder.load(ptr, align=nbytes), element, width)
            return context.make_tuple(builder, signature.return_type, lanes)

        return sig, codegen

    load.__name__ = f"load{width}"
    return intrinsic(load)


def _make_store(width: int):
    def store(typingctx, array, index, lanes):
        if not isinstance(lanes, types.BaseTuple) or len(lanes) != width:
            return None

        def codegen(context, builder, signature, args):
            array_type, _, lanes_type = signature.args
            ptr, access, element, nbytes = _access_pointer(context, builder, array_type, args[0], args[1], width)
            lanes = [context.cast(builder, builder.extract_value(args[2], n), lanes_type.types[n], array_type.dtype)
                     for n in range(width)]
            builder.store(_pack(builder, lanes, access, element), ptr, align=nbytes)
            return context.get_dummy_value()

        return types.void(array, index, lanes), codegen

    store.__name__ = f"store{width}"
    return intrinsic(store)


#: the numbers of lanes a vector access may have (at most 16 bytes in all: the code
#: generator checks the bytes)
WIDTHS = VECTOR_WIDTHS
load2, load4, load8, load16 = (_make_load(w) for w in WIDTHS)
store2, store4, store8, store16 = (_make_store(w) for w in WIDTHS)


def _sim_load(width: int):
    def load(array, index):
        return tuple(array[index + n] for n in range(width))

    return load


def _sim_store(array, index, lanes):
    for n, value in enumerate(lanes):
        array[index + n] = value


sim_load2, sim_load4, sim_load8, sim_load16 = (_sim_load(w) for w in WIDTHS)
sim_store2 = sim_store4 = sim_store8 = sim_store16 = _sim_store

