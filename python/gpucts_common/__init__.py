"""gpucts_common: the floor both Python packages of gpucts stand on (the suites' gpucts_suites and
the user-facing gpucts_preflight), so that each rule exists once in Python and once in C++.

Modules (import the one you need; none is imported here):
  launcher who this process is in its job (torchrun, Slurm, Open MPI, PMI, Lightning)
  nccl     which mapped file is NCCL itself, its ncclGetVersion, version codes as text
  files    safe file names and whole-or-nothing output files
  text     one-line messages and the cut of long ones
  junit    JUnit XML in GoogleTest's layout
  journal  the append-only case journal (JSON lines)

Standard library only (Python 3.8 or newer): the preflight runs inside users' jobs.
suites/data/common_cases.csv holds the inputs that this package and the C++ side must answer
alike; python/tests/test_common_cases.py and tests/common_cases_test.cpp read it.
"""
