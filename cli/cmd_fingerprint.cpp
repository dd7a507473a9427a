#include <cstdio>
#include <iostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "fixtures/probe/probe.hpp"
#include "results/output_file.hpp"

namespace cts::cli {

const CommandSpec kFingerprintSpec = {
    {{"output", "FILE", "write the fingerprint JSON to FILE, whole or not at all (default: standard output)"},
     {"python", "EXE", kPythonHelp}},
    {{"no-python", "do not probe torch and Lightning through python"}},
    "usage: gpucts fingerprint [--output FILE] [--no-python] [--python EXE]\n"
    "Probes this process (driver, CUDA, NCCL header/runtime/loaded library, cuDNN, torch and\n"
    "Lightning through python, GPUs, interfaces, /dev/shm, NCCL/torch env) and writes the\n"
    "gpucts.fingerprint/1 JSON to FILE or standard output."};

ProbeOptions python_probe_options(const Args& a) {
  ProbeOptions o;
  o.python = !a.flag("no-python");
  if (auto p = a.value("python")) {
    if (!o.python) throw UsageError("--python and --no-python exclude each other");
    o.python_exe = probe_python_choice(*p).exe;
  }
  return o;
}

int cmd_fingerprint(const Args& a) {
  if (!a.positional().empty()) throw UsageError("unexpected argument '" + a.positional().front() + "'");
  const ProbeOptions o = python_probe_options(a);
  std::string text = to_json(probe_fingerprint(o)).dump(2) + "\n";
  if (auto out = a.value("output")) {
    try {
      write_file_atomic(*out, text);
    } catch (const OutputError& e) {
      throw UsageError(e.what());
    }
  } else {
    std::cout << text;
  }
  return 0;
}

}  // namespace cts::cli
