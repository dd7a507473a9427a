"""The preflight's comparisons, launcher audit and probe on this machine, without a GPU or torch."""
import contextlib
import csv
import io
import math
import os
import re
import subprocess
import sys
import tempfile
import types
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))
PYTHONPATH = os.path.dirname(HERE) + os.pathsep + os.path.join(SOURCE_ROOT, "python")
sys.path[:0] = PYTHONPATH.split(os.pathsep)
import gpucts_preflight  # noqa: E402
from gpucts_common import launcher  # noqa: E402
from gpucts_preflight import compare, entries, probe, settings  # noqa: E402


def fp(rank, host="vm", hostid=None, nccl="2.28.9", lib="/venv/nvidia/nccl/lib/libnccl.so.2", env=None,
       gpus=("GPU-a",), local_rank=0, node_rank=None, world=2, ifaces=("lo", "eth0"), boot="b1"):
    e = dict(env or {})
    f = {"host": host, "boot_id": boot, "rank": rank, "nccl": {"runtime": nccl, "library": lib},
         "torch": {"version": "2.11.0+cu130", "cuda": "13.0", "nccl": "2.28.9"}, "driver": {"cuda": "13.0"},
         "gpus": [{"index": i, "uuid": u} for i, u in enumerate(gpus)],
         "interfaces": [{"name": n, "up": True, "addresses": []} for n in ifaces], "env": e}
    info = {"rank": rank, "local_rank": local_rank, "world_size": world, "env": probe.compared_env(e),
            "env_hash": probe.env_hash(e), "pid": 100 + rank,
            "launcher": {"rank": rank, "local_rank": local_rank, "node_rank": node_rank, "contradictions": []}}
    if local_rank < len(gpus):
        info["gpu_uuid"] = gpus[local_rank]
    if hostid is not None:
        raw = hostid if isinstance(hostid, bytes) else hostid.encode()
        raw = raw[:probe.HOSTID_BYTES]
        info["nccl_hostid"], info["nccl_hostid_hex"] = probe.printable(raw), raw.hex()
    f["gpucts_rank"] = info
    return f


def ids(problems):
    return sorted(set(p.id for p in problems))


def clean_env(**extra):
    """This environment without any launcher's or the preflight's variables, the package on the path."""
    names = set(launcher.LAUNCHER_VARS)
    env = {k: v for k, v in os.environ.items() if k not in names and not k.startswith("GPUCTS_PREFLIGHT")}
    env.update(PYTHONPATH=PYTHONPATH, PYTHONDONTWRITEBYTECODE="1")
    env.update(extra)
    return env


# Launcher and preflight variables that are not what they must be: each stops with status 2 and one
# line naming the variable, whichever way the preflight is called.
BAD_INPUT = (
    ({"RANK": "abc", "WORLD_SIZE": "2"}, "RANK='abc' is not an integer"),
    ({"RANK": "0", "WORLD_SIZE": "two"}, "WORLD_SIZE='two' is not an integer"),
    ({"MASTER_PORT": "70000"}, "MASTER_PORT=70000 is out of range (1 to 65535)"),
    ({"MASTER_PORT": "0"}, "MASTER_PORT=0 is out of range"),
    ({"MASTER_PORT": "-1"}, "MASTER_PORT=-1 is out of range"),
    ({"LOCAL_RANK": "-3"}, "LOCAL_RANK=-3 is out of range"),
    ({"WORLD_SIZE": "0"}, "WORLD_SIZE=0 is out of range (1 to 65536)"),
    ({"WORLD_SIZE": "1000000000", "RANK": "0"}, "WORLD_SIZE=1000000000 is out of range"),
    ({"RANK": "2", "WORLD_SIZE": "2"}, "RANK=2 is not below WORLD_SIZE=2"),
    ({"SLURM_PROCID": "-1", "SLURM_NTASKS": "2"}, "SLURM_PROCID=-1 is out of range"),
    ({"GPUCTS_PREFLIGHT_TIMEOUT_S": "nan"}, "GPUCTS_PREFLIGHT_TIMEOUT_S='nan' is not a number of seconds"),
    ({"GPUCTS_PREFLIGHT_TIMEOUT_S": "inf"}, "GPUCTS_PREFLIGHT_TIMEOUT_S='inf' is not a number of seconds"),
    ({"GPUCTS_PREFLIGHT_TIMEOUT_S": "-1"}, "GPUCTS_PREFLIGHT_TIMEOUT_S='-1' is not a number of seconds"),
    ({"GPUCTS_PREFLIGHT_TIMEOUT_S": "abc"}, "GPUCTS_PREFLIGHT_TIMEOUT_S='abc' is not a number of seconds"),
    ({"GPUCTS_PREFLIGHT_TIMEOUT_S": "1e300"}, "GPUCTS_PREFLIGHT_TIMEOUT_S='1e300' is not a number of seconds"),
    ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
      "GPUCTS_PREFLIGHT_PORT": "70000"}, "GPUCTS_PREFLIGHT_PORT=70000 is out of range (1 to 65535)"),
    ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
      "GPUCTS_PREFLIGHT_PORT": "0"}, "GPUCTS_PREFLIGHT_PORT=0 is out of range (1 to 65535)"),
    ({"GPUCTS_PREFLIGHT": "yes"}, "GPUCTS_PREFLIGHT='yes' is neither 0 nor 1"),
    ({"MASTER_ADDR": "10.0.0.1 10.0.0.2"}, "MASTER_ADDR='10.0.0.1 10.0.0.2' is not one host name or address"),
    ({"SLURM_LAUNCH_NODE_IPADDR": "node1\n"}, "SLURM_LAUNCH_NODE_IPADDR='node1\\n' is not one host name"),
    ({"GPUCTS_PREFLIGHT_WARN_ONLY": "true"}, "GPUCTS_PREFLIGHT_WARN_ONLY='true' is neither 0 nor 1"),
)


class Compare(unittest.TestCase):
    def test_same_stack_on_simulated_hosts_passes(self):
        fps = [fp(0, hostid="sim0"), fp(1, hostid="sim1")]
        self.assertEqual(ids(compare.compare(fps, 2)), [])
        self.assertEqual(compare.simulated_hosts(fps), (2, 1))

    def test_another_nccl_on_one_rank_names_rank_and_simulated_host(self):
        fps = [fp(0, hostid="sim0"), fp(1, hostid="sim1", nccl="2.28.3", lib="/usr/lib/libnccl.so.2.28.3")]
        probs = compare.compare(fps, 2)
        self.assertIn("cross-host-mismatch", ids(probs))
        self.assertIn("nccl-library-differs", ids(probs))
        line = [p for p in probs if p.id == "cross-host-mismatch"][0].line()
        self.assertIn("2.28.3 on rank 1 (sim1)", line)
        self.assertIn("2.28.9 on rank 0 (sim0)", line)
        self.assertNotIn("(vm)", line)

    def test_two_ranks_on_one_gpu_without_host_ids(self):
        probs = compare.compare([fp(0), fp(1)], 2)
        self.assertIn("gpu-shared-by-ranks", ids(probs))
        p = [p for p in probs if p.id == "gpu-shared-by-ranks"][0]
        self.assertEqual(p.ranks, [0, 1])
        self.assertIn("distinct NCCL_HOSTID", p.fix)

    def test_host_identity_is_ncclS_raw_bytes(self):
        a, b = b"s" * 1023 + b"x", b"s" * 1023 + b"y"  # differ only past byte 1023: one host to NCCL
        self.assertIn("gpu-shared-by-ranks", ids(compare.compare([fp(0, hostid=a), fp(1, hostid=b)], 2)))
        # sim\xff and sim\xfe are two hosts, though both are invalid UTF-8.
        two = [fp(0, hostid=b"sim\xff"), fp(1, hostid=b"sim\xfe")]
        self.assertNotIn("gpu-shared-by-ranks", ids(compare.compare(two, 2)))
        self.assertEqual(compare.host_name(two[0]), "sim\\xff")

    def test_socket_ifname_matching_nothing(self):
        probs = compare.compare([fp(0, hostid="s0"), fp(1, hostid="s1", env={"NCCL_SOCKET_IFNAME": "eth9"})], 2)
        self.assertEqual(ids(probs), ["nccl-socket-ifname-no-match"])
        self.assertEqual(probs[0].ranks, [1])
        self.assertEqual(probs[0].hosts, ["s1"])

    def test_ifname_syntax(self):
        self.assertTrue(compare.ifname_matches("eth", ["eth0"]))
        self.assertFalse(compare.ifname_matches("=eth", ["eth0"]))
        self.assertTrue(compare.ifname_matches("^docker,lo", ["lo", "ib0"]))
        self.assertFalse(compare.ifname_matches("^lo", ["lo"]))

    def test_settings_differ(self):
        probs = compare.compare([fp(0, hostid="s0", env={"NCCL_PROTO": "Simple"}), fp(1, hostid="s1")], 2)
        self.assertEqual(ids(probs), ["env-differs"])
        self.assertIn("NCCL_PROTO=Simple on rank 0 (s0)", probs[0].cause)
        self.assertIn("NCCL_PROTO unset on rank 1 (s1)", probs[0].cause)

    def test_node_rank_used_twice(self):
        fps = [fp(0, hostid="s0", node_rank=1), fp(1, hostid="s1", node_rank=1)]
        self.assertIn("node-rank-reused", ids(compare.compare(fps, 2)))

    def test_rank_claimed_twice_and_missing_rank(self):
        a, b = fp(1, hostid="s0"), fp(1, hostid="s1")
        probs = compare.compare([a], 2, missing=[(0, "host unknown")], claimed_twice={1: [a, b]})
        self.assertIn("rank-claimed-twice", ids(probs))
        self.assertIn("rank-not-joined", ids(probs))
        self.assertIn("rank 0 (host unknown) did not join", [p for p in probs if p.id == "rank-not-joined"][0].cause)

    def test_world_size_unlike_the_ranks(self):
        self.assertIn("world-size-differs", ids(compare.compare([fp(0, hostid="a"), fp(1, hostid="b", world=3)], 2)))

    def test_local_rank_beyond_gpus(self):
        probs = compare.compare([fp(0, hostid="a"), fp(1, hostid="b", local_rank=3)], 2)
        self.assertIn("local-rank-beyond-gpus", ids(probs))

    def test_torch_built_for_newer_cuda_than_the_driver(self):
        f = fp(0)
        f["driver"]["cuda"] = "12.8"
        self.assertIn("driver-too-old-for-torch-cuda", ids(compare.compare([f], 1)))


class Launcher(unittest.TestCase):
    def test_torchrun(self):
        i = launcher.Identity({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "MASTER_ADDR": "h",
                               "MASTER_PORT": "29500", "TORCHELASTIC_RUN_ID": "abc"})
        self.assertEqual((i.launcher, i.rank, i.world_size, i.local_rank), ("torch", 3, 4, 1))
        self.assertEqual(i.job_id, "abc")

    def test_slurm_and_openmpi_and_pmi(self):
        s = launcher.Identity({"SLURM_PROCID": "2", "SLURM_NTASKS": "8", "SLURM_LOCALID": "0", "SLURM_JOB_ID": "7"})
        self.assertEqual((s.launcher, s.rank, s.world_size, s.job_id), ("slurm", 2, 8, "slurm-7.0"))
        o = launcher.Identity({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2",
                               "OMPI_COMM_WORLD_LOCAL_RANK": "1"})
        self.assertEqual((o.launcher, o.rank, o.local_rank), ("openmpi", 1, 1))
        p = launcher.Identity({"PMI_RANK": "0", "PMI_SIZE": "2"})
        self.assertEqual(p.launcher, "pmi")

    def test_contradicting_variables(self):
        i = launcher.Identity({"RANK": "1", "WORLD_SIZE": "4", "SLURM_PROCID": "2", "SLURM_NTASKS": "4"})
        self.assertEqual(i.contradictions, ["RANK=1 but SLURM_PROCID=2"])
        self.assertEqual(launcher.Identity({"NODE_RANK": "1", "GROUP_RANK": "0"}).contradictions,
                         ["NODE_RANK=1 but GROUP_RANK=0"])

    def test_a_word_where_a_number_belongs(self):
        with self.assertRaisesRegex(launcher.LauncherError, "RANK='x' is not an integer"):
            launcher.Identity({"RANK": "x"})


class Probe(unittest.TestCase):
    def test_env_hash_is_the_cpp_preflights(self):
        # FNV-1a over "NCCL_PROTO=Simple\n" (the C++ preflight's hash of the same environment).
        self.assertEqual(probe.env_hash({"NCCL_PROTO": "Simple", "RANK": "1", "NCCL_HOSTID": "x"}),
                         probe.env_hash({"NCCL_PROTO": "Simple"}))
        self.assertNotEqual(probe.env_hash({"NCCL_PROTO": "Simple"}), probe.env_hash({}))

    def test_nccl_library_names_follow_the_one_table(self):
        table = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "suites", "data",
                             "nccl_library_names.csv")
        with open(table, newline="") as f:
            rows = list(csv.DictReader(ln for ln in f if not ln.startswith("#")))
        self.assertTrue(any(r["is_nccl"] == "yes" for r in rows) and any(r["is_nccl"] == "no" for r in rows))
        for r in rows:
            self.assertIn(r["is_nccl"], ("yes", "no"), r)
            self.assertEqual(probe.is_nccl_library(r["path"]), r["is_nccl"] == "yes", r["path"])

    def test_a_refused_cudnn_is_recorded_in_torchs_words(self):
        # A torch whose cudnn.version() raises, as torch does for a runtime cuDNN older than its build.
        def refuse():
            raise RuntimeError("cuDNN version incompatibility: PyTorch was compiled  against (9, 20, 0)\n"
                               "but found runtime version (9, 10, 2).")

        def no_nccl():
            raise RuntimeError("no NCCL")
        fake = types.SimpleNamespace(
            __version__="2.15.0", version=types.SimpleNamespace(cuda="13.2"),
            cuda=types.SimpleNamespace(nccl=types.SimpleNamespace(version=no_nccl), device_count=lambda: 0),
            backends=types.SimpleNamespace(cudnn=types.SimpleNamespace(version=refuse)),
            _C=types.SimpleNamespace(_cudnn=types.SimpleNamespace(getCompileVersion=lambda: (9, 20, 0),
                                                                  getRuntimeVersion=lambda: (9, 10, 2))))
        saved = sys.modules.get("torch")
        sys.modules["torch"] = fake
        try:
            fp = {}
            probe._torch_part(fp, 0)
        finally:
            if saved is None:
                del sys.modules["torch"]
            else:
                sys.modules["torch"] = saved
        t = fp["torch"]
        self.assertEqual((t["cudnn_build"], t["cudnn"], fp["cudnn"]), ("9.20.0", "9.10.2", "9.10.2"))
        self.assertEqual(t["cudnn_error"], "RuntimeError: cuDNN version incompatibility: PyTorch was compiled "
                                           "against (9, 20, 0) but found runtime version (9, 10, 2).")
        # The fields pass the store's check of a rank's entry; a refusal of the wrong type does not.
        fp["gpucts_rank"] = {"rank": 0, "world_size": 1}
        entries.fingerprint_check(0)("k", fp)
        t["cudnn_error"] = 7
        with self.assertRaisesRegex(entries.EntryError, "torch.cudnn_error is 7, not a string"):
            entries.fingerprint_check(0)("k", fp)

    def test_interfaces_include_loopback(self):
        names = [i["name"] for i in probe.interfaces()]
        self.assertIn("lo", names)

    def test_one_process_without_torch_reports_and_exits_by_status(self):
        env = clean_env()
        r = subprocess.run([sys.executable, "-m", "gpucts_preflight"], env=env, capture_output=True, text=True,
                           timeout=60)
        self.assertIn("gpucts preflight: 1 rank(s)", r.stderr)
        self.assertIn(r.returncode, (0, 1), r.stderr)
        bad = subprocess.run([sys.executable, "-m", "gpucts_preflight", "--frob"], env=env, capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("unknown option --frob", bad.stderr)


    def test_a_gpucts_that_cannot_probe_is_named(self):
        # A wrong GPUCTS_HOME, or a gpucts there whose fingerprint is no JSON: the report says only the
        # own probe ran, with the cause, instead of a silent PASS.
        with tempfile.TemporaryDirectory() as d:
            os.mkdir(os.path.join(d, "bin"))
            exe = os.path.join(d, "bin", "gpucts")
            with open(exe, "w") as f:
                f.write("#!/bin/sh\necho not json\n")
            os.chmod(exe, 0o755)
            for home, want in ((os.path.join(d, "nowhere"), "GPUCTS_HOME=%s holds no executable bin/gpucts"
                                % os.path.join(d, "nowhere")), (d, exe + ": Expecting value")):
                with self.subTest(home=home):
                    r = subprocess.run([sys.executable, "-m", "gpucts_preflight"], env=clean_env(GPUCTS_HOME=home),
                                       capture_output=True, text=True, timeout=60)
                    self.assertIn(r.returncode, (0, 1), r.stderr)
                    self.assertIn("WARNING gpucts-not-used: " + want, r.stderr)

    def test_target_starts_with_or_without_the_double_dash(self):
        # torchrun drops the "--" from a module's arguments: `torchrun -m gpucts_preflight -- train.py`
        # reaches the preflight as `train.py`.
        env = clean_env()
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "train.py")
            with open(script, "w") as f:
                f.write("import sys\nprint('target argv', sys.argv[1:])\n")
            for pre in ([], ["--"]):
                r = subprocess.run([sys.executable, "-m", "gpucts_preflight", "--warn-only"] + pre +
                                   [script, "--lr", "3"], env=env, capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("target argv ['--lr', '3']", r.stdout)

class BadInput(unittest.TestCase):
    """Every bad launcher or preflight variable: one line naming it and status 2, never a traceback."""

    def one_line(self, text, want):
        self.assertEqual(text.count("\n"), 1, text)
        self.assertTrue(text.startswith("gpucts preflight: "), text)
        self.assertIn(want, text)

    def test_python_m_gpucts_preflight(self):
        for env, want in BAD_INPUT:
            with self.subTest(env=env):
                # --warn-only too: a variable the preflight cannot run with is never only a warning.
                warn = [] if "GPUCTS_PREFLIGHT_WARN_ONLY" in env else ["--warn-only"]
                r = subprocess.run([sys.executable, "-m", "gpucts_preflight"] + warn, env=clean_env(**env),
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.one_line(r.stderr, want)

    def test_check_raises_preflight_failed_2_after_the_line(self):
        for env, want in BAD_INPUT:
            with self.subTest(env=env), mock.patch.dict(os.environ, clean_env(**env), clear=True):
                err = io.StringIO()
                with contextlib.redirect_stderr(err), self.assertRaises(gpucts_preflight.PreflightFailed) as c:
                    gpucts_preflight.check()
                self.assertEqual(c.exception.code, 2)
                self.one_line(err.getvalue(), want)

    def test_lightning_callback(self):
        calls = []
        callbacks = types.ModuleType("lightning.pytorch.callbacks")
        callbacks.Callback = type("Callback", (), {})
        dist = types.ModuleType("torch.distributed")
        dist.init_process_group = lambda *a, **k: calls.append((a, k))
        torch = types.ModuleType("torch")
        torch.distributed = dist
        stubs = {"lightning": types.ModuleType("lightning"), "lightning.pytorch": types.ModuleType("lightning.pytorch"),
                 "lightning.pytorch.callbacks": callbacks, "torch": torch, "torch.distributed": dist}
        trainer = types.SimpleNamespace(global_rank=0, world_size=2)
        for env, want in BAD_INPUT:
            with self.subTest(env=env), mock.patch.dict(sys.modules, stubs), \
                    mock.patch.dict(os.environ, clean_env(**env), clear=True):
                sys.modules.pop("gpucts_preflight.lightning", None)
                from gpucts_preflight import lightning
                cb = lightning.GpuctsPreflight()
                for hook in (lambda: dist.init_process_group(backend="nccl", rank=-1, world_size=-1),
                             lambda: cb.setup(trainer, None, "fit")):
                    lightning._state["done"] = False
                    err = io.StringIO()
                    with contextlib.redirect_stderr(err), self.assertRaises(gpucts_preflight.PreflightFailed) as c:
                        hook()
                    self.assertEqual(c.exception.code, 2)
                    self.one_line(err.getvalue(), want)
        self.assertEqual(calls, [])  # NCCL's init never reached
        sys.modules.pop("gpucts_preflight.lightning", None)

    def test_a_target_that_is_not_there(self):
        # One line and status 2, as for a bad variable; never runpy's traceback after the report. The
        # dotted name is looked up after the preflight (its package imported), the others before it.
        for target, want in ((["/no/such/train.py"], "can't open file '/no/such/train.py': No such file"),
                             (["-m", "gpucts_no_such_module"], "no module named 'gpucts_no_such_module'"),
                             (["--warn-only", "-m", "json.gpucts_no_such"], "no module named 'json.gpucts_no_such'"),
                             (["-m", ".train"], "-m '.train': not an absolute module name")):
            with self.subTest(target=target):
                r = subprocess.run([sys.executable, "-m", "gpucts_preflight"] + target, env=clean_env(),
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertNotIn("Traceback", r.stderr)
                last = r.stderr.strip().splitlines()[-1]
                self.assertTrue(last.startswith("gpucts preflight: ") and want in last, r.stderr)

    def test_a_caller_s_rank_and_world_size_are_checked(self):
        for rank, world, want in ((0, 0, "world_size=0 is out of range"), ("1", 2, "rank='1' is not an integer"),
                                  (3, 2, "rank 3 is not below the world size 2"), (True, 2, "rank=True")):
            with self.subTest(rank=rank, world=world), self.assertRaisesRegex(launcher.LauncherError, re.escape(want)):
                launcher.Identity({}, rank, world)


class Settings(unittest.TestCase):
    def test_timeout(self):
        self.assertEqual(settings.timeout_s({}), settings.DEFAULT_TIMEOUT_S)
        self.assertEqual(settings.timeout_s({"GPUCTS_PREFLIGHT_TIMEOUT_S": "2.5"}), 2.5)
        for bad in ("0", "-0", "nan", "-inf", "86401", "", " "):
            if bad.strip():
                with self.subTest(bad=bad), self.assertRaises(settings.SettingsError):
                    settings.timeout_s({"GPUCTS_PREFLIGHT_TIMEOUT_S": bad})

    def test_store_port(self):
        self.assertEqual(settings.store_port(29500, {}), 30500)
        self.assertEqual(settings.store_port(65000, {}), 64000)  # beyond 65535 upwards: downwards
        self.assertEqual(settings.store_port(29500, {"GPUCTS_PREFLIGHT_PORT": "1234"}), 1234)
        self.assertEqual(settings.store_port(29500, {"GPUCTS_PREFLIGHT_PORT_OFFSET": "7"}), 29507)
        with self.assertRaisesRegex(settings.SettingsError, "out of the port range either way"):
            settings.store_port(40000, {"GPUCTS_PREFLIGHT_PORT_OFFSET": "40000"})
        with self.assertRaisesRegex(settings.SettingsError, "GPUCTS_PREFLIGHT_PORT_OFFSET='x' is not an integer"):
            settings.store_port(29500, {"GPUCTS_PREFLIGHT_PORT_OFFSET": "x"})


class Entries(unittest.TestCase):
    """What a reader believes of the store: the job's signature, the size, each field."""

    KEY = "gpucts_preflight/job/fp/1/0"

    def setUp(self):
        self.token = entries.new_token()

    def unseal(self, raw, rank=1):
        return entries.unseal(self.token, self.KEY, raw, entries.fingerprint_check(rank))

    def test_a_signed_fingerprint_reads_back(self):
        f = fp(1, hostid="s1")
        self.assertEqual(self.unseal(entries.seal(self.token, self.KEY, f)), f)

    def test_an_entry_without_the_job_s_signature_is_named_foreign(self):
        for raw in (b'{"gpucts_rank":{"world_size":1e9}}', b"", b"x" * (2 << 20),
                    entries.seal(entries.new_token(), self.KEY, fp(1)),  # another run's token
                    entries.seal(self.token, "gpucts_preflight/job/fp/2/0", fp(1))):  # moved from another key
            with self.subTest(raw=raw[:40]), self.assertRaises(entries.EntryError) as c:
                self.unseal(raw)
            self.assertTrue(c.exception.foreign)
            self.assertIn("the key %s was written by a process outside this job" % self.KEY, c.exception.sentence())

    def test_a_signed_entry_with_a_bad_field_is_named_with_the_field(self):
        cases = (({"gpucts_rank": {"rank": 1, "world_size": 1e9}}, "gpucts_rank.world_size is 1000000000.0, not an integer"),
                 ({"gpucts_rank": {"rank": 1, "world_size": 10 ** 9}}, "gpucts_rank.world_size=1000000000 is out of range"),
                 ({"gpucts_rank": {"rank": 1, "world_size": 0}}, "gpucts_rank.world_size=0 is out of range"),
                 ({"gpucts_rank": {"rank": 1}}, "gpucts_rank.world_size is missing"),
                 ({"gpucts_rank": {"rank": 2, "world_size": 3}}, "gpucts_rank.rank=2 under the key of rank 1"),
                 ({"gpucts_rank": {"rank": True, "world_size": 3}}, "gpucts_rank.rank is true, not an integer"),
                 ({"gpucts_rank": {"rank": 1, "world_size": 3, "env": {"NCCL_ALGO": 3}}}, "gpucts_rank.env.NCCL_ALGO is 3"),
                 ({"gpucts_rank": {"rank": 1, "world_size": 3}, "gpus": [{"uuid": ["GPU-a"]}]}, "gpus[0].uuid"),
                 ({"gpucts_rank": {"rank": 1, "world_size": 3}, "nccl": "2.28.9"}, "nccl is \"2.28.9\", not an object"),
                 ([1, 2], "the value is [1, 2], not an object"))
        for value, want in cases:
            with self.subTest(value=value), self.assertRaises(entries.EntryError) as c:
                self.unseal(entries.seal(self.token, self.KEY, value))
            self.assertFalse(c.exception.foreign)
            self.assertIn(want, c.exception.sentence())

    def test_size_is_capped_on_both_sides(self):
        big = fp(1)
        big["env"] = {"NCCL_X%d" % i: "v" * 1000 for i in range(1100)}
        with self.assertRaisesRegex(entries.EntryError, "above the limit"):
            entries.seal(self.token, self.KEY, big)

    def test_the_token_is_32_hex_digits(self):
        self.assertEqual(entries.token_from("t", self.token.encode()), self.token)
        for raw in (b"", b"x" * 32, self.token.upper().encode(), self.token.encode() + b"0"):
            with self.subTest(raw=raw), self.assertRaises(entries.EntryError):
                entries.token_from("t", raw)

    def test_a_report_is_checked_too(self):
        ok = {"status": 0, "text": "PASS", "processes": 2, "members": [[0, 0], [1, 0]], "problems": [],
              "printer_pid": 10, "seconds": 1.5}
        entries.report_check("r", ok)
        for bad in (dict(ok, status=7), dict(ok, members=[[0, "x"]]), dict(ok, seconds=math.inf),
                    dict(ok, processes=0), {k: v for k, v in ok.items() if k != "members"}):
            with self.subTest(bad=bad), self.assertRaises(entries.EntryError):
                entries.report_check("r", bad)


def cpp_list(path, function, pattern):
    """The matches of `pattern` in the body of the C++ function `function` of `path`."""
    with open(os.path.join(SOURCE_ROOT, path)) as f:
        src = f.read()
    start = src.index(function)
    body = src[start:src.index("\n}\n", start)]
    return re.findall(pattern, body)


class CrossRankFields(unittest.TestCase):
    """compare.py's table is the C++ side's two lists, as data: the same fields, ids and order."""

    def test_the_table_lists_what_the_matrix_rule_compares(self):
        names = cpp_list("matrix/rules.cpp", "const std::vector<CrossField>& cross_fields()",
                         r'\{"([^"]+)",\s*\[\]\(const Fingerprint')
        rule_ids = cpp_list("matrix/rules.cpp", "bool cross_host(", r'\{"([a-z-]+)", "(?:error|warning)", field\.name')
        self.assertTrue(names and len(set(rule_ids)) == 1, (names, rule_ids))
        rows = [r for r in compare.FIELDS if r["engine"] == "rules"]
        self.assertEqual([(r["field"], r["id"]) for r in rows], [(n, rule_ids[0]) for n in names])

    def test_the_table_lists_what_the_mpi_preflight_compares(self):
        pairs = cpp_list("fixtures/reliability/preflight.cpp", "std::vector<Field> compared_fields()",
                         r'\{"([a-z-]+)",\s*"([^"]+)",')
        self.assertTrue(pairs)
        rows = [r for r in compare.FIELDS if r["engine"] == "preflight"]
        self.assertEqual([(r["id"], r["field"]) for r in rows], pairs)

    def test_every_row_is_well_formed(self):
        for r in compare.FIELDS:
            with self.subTest(row=r["field"]):
                self.assertIn(r["engine"], ("rules", "preflight"))
                self.assertRegex(r["normalize"], r"^(text|presence|env|release[1-9])$")
                self.assertIn(r["absent"], ("skip", "value"))
                self.assertIn(r["severity"], ("error", "warning"))
                self.assertTrue(r["path"] and r["fix"] and r["id"])

    def test_values_as_the_cpp_side_writes_them(self):
        row = next(r for r in compare.FIELDS if r["field"] == "CUDA runtime")
        self.assertEqual(compare.field_value({"cuda_runtime": "13.0.88"}, row), "13.0")
        self.assertEqual(compare.field_value({"cuda_runtime": "13"}, row), "13.0")
        row = next(r for r in compare.FIELDS if r["field"] == "torch NCCL")
        self.assertEqual(compare.field_value({"torch": {"nccl": "2.27.3", "nccl_loaded": "2.28.9"}}, row), "2.28.9")
        self.assertEqual(compare.field_value({"torch": {"nccl": "2.27.3"}}, row), "2.27.3")

    def test_the_fields_of_the_mpi_preflight_are_compared_too(self):
        a, b = fp(0, hostid="s0"), fp(1, hostid="s1")
        a["nccl"]["header"], b["nccl"]["header"] = "2.28.9", "2.27.3"
        self.assertIn("nccl-header-differs", ids(compare.compare([a, b], 2)))
        a, b = fp(0, hostid="s0"), fp(1, hostid="s1")
        b["driver"]["cuda"] = "12.9"
        probs = compare.compare([a, b], 2)
        self.assertIn("driver CUDA version (cudaDriverGetVersion) differs: 13.0 on rank 0 (s0); 12.9 on rank 1 (s1)",
                      [p.cause for p in probs])
        a, b = fp(0, hostid="s0"), fp(1, hostid="s1")
        del b["nccl"]
        self.assertIn("NCCL runtime presence differs: loaded on rank 0 (s0); absent on rank 1 (s1)",
                      [p.cause for p in probs + compare.compare([a, b], 2)])

    def test_a_rank_without_the_value_is_left_out_of_the_rule_s_fields(self):
        a, b, c = fp(0, hostid="s0"), fp(1, hostid="s1"), fp(2, hostid="s2")
        del c["torch"]
        self.assertEqual(ids(compare.compare([a, b, c], 3)), [])


class TargetExitStatus(unittest.TestCase):
    """The training script's own exit status is the process's, through `python -m gpucts_preflight --`."""

    def run_target(self, body):
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "train.py")
            with open(script, "w") as f:
                f.write(body)
            # --warn-only: this machine may fail the one-process check (no torch, no GPU); the target runs.
            return subprocess.run([sys.executable, "-m", "gpucts_preflight", "--warn-only", "--", script],
                                  env=clean_env(), capture_output=True, text=True, timeout=120)

    def test_exit_3(self):
        self.assertEqual(self.run_target("import sys\nsys.exit(3)\n").returncode, 3)

    def test_an_exception(self):
        r = self.run_target("raise RuntimeError('boom in train')\n")
        self.assertEqual(r.returncode, 1)
        self.assertIn("RuntimeError: boom in train", r.stderr)

    def test_sys_exit_with_a_message(self):
        r = self.run_target("import sys\nsys.exit('stopped by train')\n")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip().splitlines()[-1], "stopped by train")

    def test_success(self):
        self.assertEqual(self.run_target("print('trained')\n").returncode, 0)


class SeedLaunchers(unittest.TestCase):
    """How the seed entries start a rank under each launcher (the runs themselves need a GPU)."""

    def setUp(self):
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "repro"))
        import seed_causes
        self.sc = seed_causes

    def test_every_launched_cause_is_a_cause(self):
        self.assertTrue(set(self.sc.LAUNCHERS) <= set(self.sc.CAUSES))

    def test_torchrun_makes_each_rank_a_node_and_leaves_the_rank_variables_to_torchrun(self):
        env = self.sc.base_env(3, 2, 29511)
        argv = self.sc.launch("torchrun", "preflight", "py", 3, 2, env)
        self.assertEqual(argv[:3], ["py", "-m", "torch.distributed.run"])
        self.assertEqual(argv[argv.index("--node_rank") + 1], "2")
        self.assertEqual(argv[argv.index("--master_port") + 1], "29511")
        self.assertEqual(argv[-4:-1], ["-m", "gpucts_preflight", "--"])  # torchrun drops the "--"
        for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "NODE_RANK", "MASTER_PORT"):
            self.assertNotIn(k, env)
        self.assertIn("NCCL_HOSTID", env)

    def test_lightning_adds_the_callback_only_the_second_time(self):
        stack, pre = self.sc.base_env(3, 1, 1), self.sc.base_env(3, 1, 1)
        self.assertEqual(self.sc.launch("lightning", "stack", "py", 3, 1, stack)[1], self.sc.LIGHTNING_SCRIPT)
        self.sc.launch("lightning", "preflight", "py", 3, 1, pre)
        self.assertNotIn("GPUCTS_SEED_PREFLIGHT", stack)
        self.assertEqual((pre["GPUCTS_SEED_PREFLIGHT"], pre["NODE_RANK"], pre["LOCAL_RANK"]), ("1", "1", "0"))


if __name__ == "__main__":
    unittest.main()
