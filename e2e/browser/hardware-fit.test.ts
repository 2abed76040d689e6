import { describe, expect, it } from "vitest";
import { signedInApiSession } from "./support/admin-api.js";
import { heading, visible } from "./support/console-actions.js";
import { useSignedInConsole } from "./support/signed-in-console.js";

// An operator's task (issue 25, hardware fit): add_sub is allowed on CPU and GPU (its config's
// operon_hardware_kinds), and perf reports measured on a CPU and a GPU hardware profile price each kind. The
// Scheduler page shows each kind's cost per 1,000 inferences and why one is chosen. The host has no GPU
// (CUDA_VISIBLE_DEVICES=""), so the GPU, though the cheaper by its report, is not a candidate, and the page says so.
const ADMIN = { email: "hardware-fit@example.com", password: "a long enough passphrase" };
const HEADER =
  "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency";
const csvAt = (rps: number): string => `${HEADER}\n1,${rps},10,100,10,10,4000,10,2,4000,4500,4800,5000\n`;

describe("console: the scheduler's hardware fit", () => {
  const system = useSignedInConsole({
    admin: ADMIN,
    extraArgs: ["--scheduler-period-secs", "1", "--scheduler-cpu-slots", "4", "--scheduler-gpu-slots", "2"],
    env: { CUDA_VISIBLE_DEVICES: "" },
    prepare: async (operon) => {
      const api = await signedInApiSession(operon, ADMIN);
      // add_sub again, with the parameter that lets the scheduler choose its kind (a load's config override).
      const config = (await (await fetch(`${operon.httpUrl}/v2/models/add_sub/config`)).json()) as Record<
        string,
        unknown
      >;
      const reload = await fetch(`${operon.httpUrl}/v2/repository/models/add_sub/load`, {
        method: "POST",
        body: JSON.stringify({
          parameters: {
            config: JSON.stringify({
              ...config,
              parameters: { operon_hardware_kinds: { string_value: "CPU,GPU" } },
            }),
          },
        }),
      });
      expect(reload.status, await reload.text()).toBe(200);
      const cpu = await api.client.hardware.create.mutate({ name: "c-host", kind: "CPU", costPerHour: 0.4 });
      const gpu = await api.client.hardware.create.mutate({
        name: "g-host",
        kind: "GPU",
        gpuCount: 2,
        gpuModel: "fake",
        gpuPriceShare: 0.8,
        costPerHour: 4,
      });
      const target = { kind: "MODEL" as const, name: "add_sub" };
      await api.client.perf.importCsv.mutate({
        target,
        fileName: "cpu.csv",
        csv: csvAt(10),
        hardwareProfileId: cpu.id,
      });
      await api.client.perf.importCsv.mutate({
        target,
        fileName: "gpu.csv",
        csv: csvAt(400),
        hardwareProfileId: gpu.id,
      });
    },
  });

  it("lists each candidate kind with its cost per 1,000 inferences and why the CPU is chosen on a GPU-less host", async () => {
    const { page } = system.session;
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Scheduler" }).click();
    await visible(heading(page, "Scheduler"));
    await visible(heading(page, "Hardware fit"));
    const table = await visible(page.getByRole("table", { name: "Hardware fit candidates" }));
    // CPU: 0.40 / 4 slots = 0.10 an instance-hour at 10 req/s: 0.10 / 36 = 0.00278 per 1,000.
    const cpu = await visible(table.getByRole("row", { name: /add_sub.*CPU.*Chosen/ }), 20_000);
    const cpuText = (await cpu.textContent()) ?? "";
    expect(cpuText).toContain("c-host");
    expect(cpuText).toContain("0.00278 USD");
    expect(cpuText).toContain("0.100 USD an instance-hour");
    expect(cpuText).toMatch(
      /CPU is the cheapest: 0\.00278 USD per 1,000 inferences at the p99 budget \(vs GPU not a candidate: this host has no GPU\)/,
    );
    // GPU: 4.00 × 0.8 / (2 GPUs × 2 slots) = 0.80 an instance-hour at 400 req/s: 0.000556, but no GPU here.
    const gpu = await visible(table.getByRole("row", { name: /add_sub.*GPU.*Not a candidate/ }));
    const gpuText = (await gpu.textContent()) ?? "";
    expect(gpuText).toContain("0.000556 USD");
    expect(gpuText).toContain("this host has no GPU");
    expect(system.session.errors).toEqual([]);
  }, 60_000);
});
