-- A perf report can be imported from perf_analyzer's CSV (perf.importCsv).
ALTER TYPE "PerfTrigger" ADD VALUE 'IMPORTED';
