/**
 * Which of a model's on-disk versions to serve, by Triton's version_policy:
 * latest { num_versions } (default: 1), all {}, specific { versions }.
 */
export interface VersionPolicy {
  latest?: { num_versions?: number };
  all?: Record<string, never>;
  specific?: { versions?: number[] };
}

export function selectVersions(available: readonly number[], policy: VersionPolicy | undefined): number[] {
  const sorted = [...available].sort((a, b) => a - b);
  if (policy?.all !== undefined) return sorted;
  if (policy?.specific !== undefined) {
    const wanted = new Set(policy.specific.versions ?? []);
    return sorted.filter((version) => wanted.has(version));
  }
  const count = Math.max(1, policy?.latest?.num_versions ?? 1);
  return sorted.slice(-count);
}
