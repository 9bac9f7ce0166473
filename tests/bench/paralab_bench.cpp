// paralab-bench: benchmark programs that print tables, each against a reference measured in
// the same run. Try: paralab-bench step | gpt | gemm | simd | teach | latency | dp | ep | mp | cp | comm [--json]
#include <cstdio>
#include <cstring>

#include "capabilities.h"
#include "platform.h"

int benchStep(int argc, char** argv);
int benchGemm(int argc, char** argv);
int benchTeach(int argc, char** argv);
int benchLatency(int argc, char** argv);
int benchDp(int argc, char** argv);
int benchMp(int argc, char** argv);
int benchEp(int argc, char** argv);
int benchGpt(int argc, char** argv);
int benchCp(int argc, char** argv);
int benchProject(int argc, char** argv);
int benchRoofline(int argc, char** argv);
int benchLayouts(int argc, char** argv);
int benchSimd(int argc, char** argv);
#ifndef PARALAB_NO_BENCH_COMM
int benchComm(int argc, char** argv);
#endif

int main(int argc, char** argv) {
  paralab::useFastBlasKernels(argc, argv);
  const char* usage =
      "usage: paralab-bench step|gpt|gemm|simd|teach|latency|roofline|layouts|dp|ep|mp|cp|project|comm [--json] [--help] [--version]\n";
  if (argc < 2) {
    std::fputs(usage, stderr);
    return 2;
  }
  const char* what = argv[1];
  if (!std::strcmp(what, "--version")) {
    std::printf("paralab-bench %s\n", paralab::version());
    return 0;
  }
  // The head line: the vector level of ParaLab's own kernels (stderr under --json, whose output
  // stays one JSON document).
  bool json = false;
  for (int i = 1; i < argc; ++i) json = json || !std::strcmp(argv[i], "--json");
  if (std::strcmp(what, "--help") && std::strcmp(what, "-h"))
    std::fprintf(json ? stderr : stdout, "%s\n", paralab::simdLevelSummary().c_str());
  // Each sub-command parses its own flags, seeing itself as argv[0].
  if (!std::strcmp(what, "step")) return benchStep(argc - 1, argv + 1);
  if (!std::strcmp(what, "gpt")) return benchGpt(argc - 1, argv + 1);
  if (!std::strcmp(what, "gemm")) return benchGemm(argc - 1, argv + 1);
  if (!std::strcmp(what, "simd")) return benchSimd(argc - 1, argv + 1);
  if (!std::strcmp(what, "teach")) return benchTeach(argc - 1, argv + 1);
  if (!std::strcmp(what, "latency")) return benchLatency(argc - 1, argv + 1);
  if (!std::strcmp(what, "roofline")) return benchRoofline(argc - 1, argv + 1);
  if (!std::strcmp(what, "layouts")) return benchLayouts(argc - 1, argv + 1);
  if (!std::strcmp(what, "dp")) return benchDp(argc - 1, argv + 1);
  if (!std::strcmp(what, "mp")) return benchMp(argc - 1, argv + 1);
  if (!std::strcmp(what, "ep")) return benchEp(argc - 1, argv + 1);
  if (!std::strcmp(what, "cp")) return benchCp(argc - 1, argv + 1);
  if (!std::strcmp(what, "project")) return benchProject(argc - 1, argv + 1);
#ifndef PARALAB_NO_BENCH_COMM
  if (!std::strcmp(what, "comm")) return benchComm(argc - 1, argv + 1);
#endif
  if (!std::strcmp(what, "--help") || !std::strcmp(what, "-h")) {
    std::fputs(usage, stdout);
    return 0;
  }
  std::fprintf(stderr,
               "paralab-bench: unknown benchmark '%s' (allowed: step, gpt, gemm, simd, teach, latency, "
               "roofline, layouts, dp, ep, mp, cp, project, comm)\n",
               what);
  return 2;
}
