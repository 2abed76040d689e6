/** Standard base64 with padding (what models.upload.chunk takes), built in pieces so large chunks do not overflow the call stack. */
export function bytesToBase64(bytes: Uint8Array): string {
  const PIECE = 0x8000;
  let binary = "";
  for (let start = 0; start < bytes.length; start += PIECE) {
    binary += String.fromCharCode(...bytes.subarray(start, start + PIECE));
  }
  return btoa(binary);
}
