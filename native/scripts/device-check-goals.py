# The three goals (issue 19) from one device-check run, as PASS/FAIL lines with their figures:
#   1. preprocessing kernel >= 50 % of the device's memory bandwidth (4.8 TB/s on an H200), bytes read + written;
#   2. MLP 784-2048-2048-10 at batch >= 1024: >= 0.5x PyTorch's rows/s on the same GPU and precision
#      (both timed on the device with the FP32 -> FP16/BF16 input conversion outside);
#   3. 2 streams >= 1.3x 1 stream on the preprocessing -> MLP pipeline where copies dominate.
# Usage: python3 device-check-goals.py BENCH_OUTPUT TORCH_OUTPUT (the Markdown that cuda-bench and
# device-check-torch.py print). A figure missing from the output (a step failed or ran out of time) is a
# FAIL saying so. Exit 0 when every figure was found, whatever the verdicts; 1 otherwise.
import re
import sys


def rows(text, section):
    """The table rows (lists of cells) under the '## <section>...' heading of text, or of all text if None."""
    if section is not None:
        start = text.find("## " + section)
        if start < 0:
            return []
        end = text.find("\n## ", start + 1)
        text = text[start : end if end >= 0 else len(text)]
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("|") and not line.startswith("|---"):
            out.append([cell.strip() for cell in line.strip("|").split("|")])
    return out


def number(cell):
    match = re.match(r"^([0-9.]+)", cell)
    return float(match.group(1)) if match else None


def main(bench_path, torch_path):
    bench = open(bench_path, encoding="utf8").read()
    torch = open(torch_path, encoding="utf8").read()
    lines, missing = [], 0

    def verdict(ok, text):
        lines.append(("PASS" if ok else "FAIL") + ": " + text)

    # 1. Bandwidth: the row's "of 4.8 TB/s" percentage.
    found = [r for r in rows(bench, "Preprocessing kernel") if len(r) == 5 and r[4].endswith("%")]
    if found:
        share, tbs = number(found[0][4]), number(found[0][3])
        verdict(share >= 50, f"preprocessing kernel {tbs:.2f} TB/s = {share:.0f} % of 4.8 TB/s (goal >= 50 %)")
    else:
        missing += 1
        verdict(False, "preprocessing kernel bandwidth: no figure in the bench output")

    # 2. MLP against PyTorch, each precision and batch >= 1024 both measured.
    ours = {(r[0], r[1]): number(r[3]) for r in rows(bench, "MLP 784-2048-2048-10") if len(r) == 5 and r[1].isdigit()}
    theirs = {(r[0], r[1]): number(r[3]) for r in rows(torch, None) if len(r) == 5 and r[1].isdigit()}
    pairs = sorted(k for k in ours if k in theirs and int(k[1]) >= 1024)
    if not pairs:
        missing += 1
        verdict(False, "MLP vs PyTorch: no batch >= 1024 measured by both")
    for precision, batch in pairs:
        ratio = ours[(precision, batch)] / theirs[(precision, batch)]
        verdict(
            ratio >= 0.5,
            f"MLP {precision} batch {batch}: {ours[(precision, batch)]:.0f} rows/s = {ratio:.2f}x PyTorch's "
            f"{theirs[(precision, batch)]:.0f} (goal >= 0.5x)",
        )

    # 3. Streams on the pipeline.
    pipeline = {r[1]: number(r[2]) for r in rows(bench, "Pipeline") if len(r) == 4 and r[1].isdigit()}
    if "1" in pipeline and "2" in pipeline:
        ratio = pipeline["2"] / pipeline["1"]
        four = f"; 4 streams {pipeline['4'] / pipeline['1']:.2f}x" if "4" in pipeline else ""
        verdict(
            ratio >= 1.3,
            f"preprocess -> MLP pipeline, 2 streams {ratio:.2f}x 1 stream ({pipeline['2']:.0f} vs {pipeline['1']:.0f} images/s{four}; goal >= 1.3x)",
        )
    else:
        missing += 1
        verdict(False, "pipeline streams: no 1- and 2-stream figures in the bench output")

    print("\n".join("- " + line for line in lines))
    return 0 if missing == 0 else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: device-check-goals.py BENCH_OUTPUT TORCH_OUTPUT")
    sys.exit(main(sys.argv[1], sys.argv[2]))
