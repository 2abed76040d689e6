// Writes the PNG fixtures of the image-classification example (run from the
// repository root: `node examples/images/make-images.mjs`; the PNGs are
// committed, so this only documents and reproduces them):
//
//   text_0.png        RGB, 160x40: a dark line of text on a light background
//   text_180.png      the same image rotated by 180 degrees
//   text_grey.png     8-bit greyscale, 120x32, shorter text: exercises the grey
//                     colour type and the right padding (resized to 180x48)
//
// The text is drawn with a built-in 5x7 pixel font, so the images need
// nothing but pngjs (the PNG encoder the example models decode with) and
// come out byte-for-byte the same on every run.
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import pngjs from "pngjs";

const { PNG } = pngjs;
const here = dirname(fileURLToPath(import.meta.url));

// A 5x7 font: one string of 5 bits per row, top to bottom.
const FONT = {
  T: ["11111", "00100", "00100", "00100", "00100", "00100", "00100"],
  E: ["11111", "10000", "10000", "11110", "10000", "10000", "11111"],
  X: ["10001", "10001", "01010", "00100", "01010", "10001", "10001"],
  L: ["10000", "10000", "10000", "10000", "10000", "10000", "11111"],
  F: ["11111", "10000", "10000", "11110", "10000", "10000", "10000"],
  4: ["00010", "00110", "01010", "10010", "11111", "00010", "00010"],
  7: ["11111", "00001", "00010", "00100", "01000", "01000", "01000"],
  " ": ["00000", "00000", "00000", "00000", "00000", "00000", "00000"],
};

/** A greyscale canvas (one byte per pixel) with `text` drawn at `scale`, dark ink on a light background. */
function drawText(text, width, height, scale, left, top) {
  const pixels = new Uint8Array(width * height).fill(235);
  let x0 = left;
  for (const char of text) {
    const glyph = FONT[char];
    if (glyph === undefined) throw new Error(`no glyph for '${char}'`);
    glyph.forEach((row, gy) => {
      for (let gx = 0; gx < 5; gx += 1) {
        if (row[gx] !== "1") continue;
        for (let dy = 0; dy < scale; dy += 1) {
          for (let dx = 0; dx < scale; dx += 1) {
            const x = x0 + gx * scale + dx;
            const y = top + gy * scale + dy;
            if (x < width && y < height) pixels[y * width + x] = 25;
          }
        }
      }
    });
    x0 += 6 * scale;
  }
  return pixels;
}

/** Encodes a greyscale canvas as a PNG of colour type 2 (RGB, a slight blue tint on the ink) or 0 (grey). */
function encode(pixels, width, height, colorType) {
  const png = new PNG({ width, height, colorType, inputColorType: 6, inputHasAlpha: true });
  for (let i = 0; i < width * height; i += 1) {
    const v = pixels[i];
    png.data[i * 4] = v;
    png.data[i * 4 + 1] = v;
    png.data[i * 4 + 2] = colorType === 0 ? v : Math.min(255, v + 20);
    png.data[i * 4 + 3] = 255;
  }
  return PNG.sync.write(png, { colorType, inputColorType: 6, inputHasAlpha: true });
}

const rotate180 = (pixels) => Uint8Array.from(pixels).reverse();

const upright = drawText("FELT 47", 160, 40, 3, 12, 9);
writeFileSync(join(here, "text_0.png"), encode(upright, 160, 40, 2));
writeFileSync(join(here, "text_180.png"), encode(rotate180(upright), 160, 40, 2));
writeFileSync(join(here, "text_grey.png"), encode(drawText("TEXT", 120, 32, 3, 8, 6), 120, 32, 0));
console.log("wrote text_0.png, text_180.png, text_grey.png in", here);
