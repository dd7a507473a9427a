// gpucts: the command-line entry point (check, fingerprint, qualify, report, ...); the command
// table and its CLI11 declaration are in cli/app.cpp.
#include "cli/app.hpp"

int main(int argc, char** argv) {
  cts::cli::Cli cli;
  return cli.run(argc, argv);
}
