"""gpucts Python suites: torch.distributed, DDP, FSDP2 and Lightning as users run them.

Needs only the standard library and, to run cases, torch (Lightning where installed). Run it as
`python3 -m gpucts_suites --world=sim2 --junit-output=out.xml` or through the installed launcher
`libexec/gpucts/gpucts_python_suites`.
"""
