"""What a run writes: the journal, JUnit XML in GoogleTest's layout and the exit code. The formats
are gpucts_common's (journal, junit, files), shared with the preflight; this module names them for
the suites and adds the suites' exit codes."""
from gpucts_common.files import safe_file_name, write_atomic  # noqa: F401
from gpucts_common.journal import Journal, journal_path, now_ms, read_journal  # noqa: F401
from gpucts_common.junit import Result, iso_time, junit_xml, result_from_dict, result_to_dict, seconds  # noqa: F401
from gpucts_common.text import one_line  # noqa: F401


def exit_code(results):
    """0 when every case that ran passed, 1 on any failure, 77 when every case skipped."""
    if any(r.status == "failed" for r in results):
        return 1
    if results and all(r.status == "skipped" for r in results):
        return 77
    return 0
