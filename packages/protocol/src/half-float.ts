/**
 * The one FP16 (IEEE 754 binary16) and BF16 (bfloat16: the upper 16 bits of
 * a float32) codec: single values and arrays, as the raw 16-bit patterns a
 * tensor's bytes hold (little-endian on the wire; a Uint16Array over them).
 *
 * Encoding rounds to nearest, ties to even. It goes through float32 first:
 * rounding a double to float32 and then to 11 (FP16) or 8 (BF16)
 * significant bits gives the same result as rounding it once, since float32
 * carries at least 2p + 2 of them. Values past the FP16 range become
 * ±Infinity, values below half its smallest subnormal become ±0, NaN stays
 * a (quiet) NaN.
 */
const F32 = new Float32Array(1);
const U32 = new Uint32Array(F32.buffer);

/** The float32 bit pattern of a number (rounded to float32). */
function float32Bits(value: number): number {
  F32[0] = value;
  return U32[0]!;
}

/** FP16 bits -> number (exact). */
export function float16BitsToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 0x1f) return fraction === 0 ? sign * Infinity : NaN;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

/** number -> FP16 bits, rounded to nearest even. */
export function numberToFloat16Bits(value: number): number {
  const x = float32Bits(value);
  const sign = (x >>> 16) & 0x8000;
  const exponent = (x >>> 23) & 0xff;
  let mantissa = x & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa !== 0 ? 0x200 : 0);
  const e = exponent - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // A subnormal half (or zero): the implicit 1 joins the mantissa, shifted into the 10 fraction bits.
    if (e < -10) return sign;
    mantissa |= 0x800000;
    const shift = 14 - e;
    let half = mantissa >> shift;
    const rest = mantissa & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rest > halfway || (rest === halfway && (half & 1) === 1)) half += 1;
    return sign | half;
  }
  // A carry out of the fraction bumps the exponent, up to Infinity (0x7c00): both are right.
  let half = sign | (e << 10) | (mantissa >> 13);
  const rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (half & 1) === 1)) half += 1;
  return half;
}

/** BF16 bits -> number (exact). */
export function bfloat16BitsToNumber(bits: number): number {
  U32[0] = (bits & 0xffff) << 16;
  return F32[0]!;
}

/** number -> BF16 bits, rounded to nearest even. */
export function numberToBfloat16Bits(value: number): number {
  const x = float32Bits(value);
  if (Number.isNaN(value)) return ((x >>> 16) & 0xffff) | 0x40;
  const rounded = x + 0x7fff + ((x >>> 16) & 1);
  return (rounded >>> 16) & 0xffff;
}

export type HalfFloatType = "FP16" | "BF16";

/** Half-float bits -> Float32Array (every FP16 and BF16 value is exact in float32). */
export function decodeHalfFloats(datatype: HalfFloatType, bits: ArrayLike<number>): Float32Array {
  const decode = datatype === "FP16" ? float16BitsToNumber : bfloat16BitsToNumber;
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i += 1) out[i] = decode(bits[i]!);
  return out;
}

/** Numbers -> half-float bits, each rounded to nearest even. */
export function encodeHalfFloats(datatype: HalfFloatType, values: ArrayLike<number>): Uint16Array {
  const encode = datatype === "FP16" ? numberToFloat16Bits : numberToBfloat16Bits;
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i += 1) out[i] = encode(values[i]!);
  return out;
}
