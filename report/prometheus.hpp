// What a cluster's node tooling reads of a qualification: one word for a label or taint, and a
// node_exporter textfile (Prometheus text format 0.0.4) for dashboards and alerts.
#pragma once
#include <string>

#include "report/bundle.hpp"

namespace cts {

// The node status words, in the order of the verdict kinds: pass | waived | fail | no_gpu | not_run.
// Throws std::invalid_argument for any other kind, so that an unknown verdict never reads as a pass.
std::string node_status_word(const std::string& verdict_kind);

// The status file: the word and a newline, written whole (temporary file, rename); a Kubernetes
// label or a Slurm drain reason reads it. Throws OutputError where it cannot be written.
void write_node_status(const std::string& path, const std::string& verdict_kind);

// The textfile of a bundle: the verdict (gpucts_verdict{kind=...} 1 for the run's kind, 0 for the
// others), cases by result, suites by status, the median time of an 8-byte call and the bus
// bandwidth (the algorithm bandwidth where one rank has no bus) at 1 GiB for every collective
// measured, blocking and out of place, without CUDA graphs, in seconds and bytes per second.
std::string prometheus_text(const bundle::Bundle& b, const std::string& verdict_kind);

}  // namespace cts
