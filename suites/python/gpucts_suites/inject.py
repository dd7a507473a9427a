"""GPUCTS_INJECT, the same spelling as the C++ suites use, so a self-test proves that a wrong value
fails the right case on the right rank:

  GPUCTS_INJECT=[rank=<r>:]corrupt:<case regex>:<element index>   flip every bit of that element
  GPUCTS_INJECT=[rank=<r>:]corrupt-last:<case regex>              ... of the last element
  GPUCTS_INJECT=[rank=<r>:]raise:<case regex>                      raise as the case starts
  GPUCTS_INJECT=[rank=<r>:]hang:<case regex>                       never come out of the case

The regex is searched in "<Suite>.<name>" (e.g. `^Collectives\\.all_reduce_sum_i32_1021$`). In the
collective cases the element of the result is changed after the collective, before the check; in
the DDP cases a communication hook changes that element of the first gradient bucket after its
all-reduce. `raise` makes the rank leave the case before its first collective, as a training step
that raises on one rank does: its peers wait in that collective, and the launcher ends the world
and starts a new one for the cases after it. `hang` keeps the rank in the case for good, as a
collective that never completes does (on every rank: the launcher's --case-timeout ends it). A
malformed value, a rank outside the world or a regex that selects none of its cases is one line
and exit 2 before the first case; a case it selects that then changes nothing on a rank (an index
beyond the result) fails saying so."""
import os
import re


def is_ascii_decimal(text):
    """ASCII digits only: str.isdigit() also takes '²', which int() then refuses with a traceback."""
    return text.isascii() and text.isdigit()


class InjectError(ValueError):
    pass


class InjectedFault(RuntimeError):
    """What a rank raises where GPUCTS_INJECT says raise."""


class InjectPlan:
    def __init__(self, spec=""):
        self.spec = spec
        self.rank = -1
        self.action = ""  # corrupt | raise | hang
        self.last = False
        self.index = 0
        self.regex = None
        if not spec:
            return
        usage = (" (expected [rank=<r>:]corrupt:<case regex>:<index>, [rank=<r>:]corrupt-last:<case regex>"
                 ", [rank=<r>:]raise:<case regex> or [rank=<r>:]hang:<case regex>)")
        action = spec
        if spec.startswith("rank="):
            head, sep, action = spec[5:].partition(":")
            if not sep or not is_ascii_decimal(head):
                raise InjectError("GPUCTS_INJECT='%s': rank '%s' is not a number >= 0 followed by ':'%s"
                                  % (spec, head, usage))
            self.rank = int(head)
        if action.startswith(("raise:", "hang:")):
            self.action, _, pattern = action.partition(":")
        elif action.startswith("corrupt-last:"):
            self.action, self.last = "corrupt", True
            pattern = action[len("corrupt-last:"):]
        elif action.startswith("corrupt:"):
            self.action = "corrupt"
            pattern, sep, idx = action[len("corrupt:"):].rpartition(":")
            if not sep:
                raise InjectError("GPUCTS_INJECT='%s': no ':<index>' after the case regex%s" % (spec, usage))
            if not is_ascii_decimal(idx):
                raise InjectError("GPUCTS_INJECT='%s': index '%s' is not a number >= 0%s" % (spec, idx, usage))
            self.index = int(idx)
        else:
            raise InjectError("GPUCTS_INJECT='%s': unknown action%s" % (spec, usage))
        if not pattern:
            raise InjectError("GPUCTS_INJECT='%s': empty case regex%s" % (spec, usage))
        try:
            self.regex = re.compile(pattern)
        except re.error as e:
            raise InjectError("GPUCTS_INJECT='%s': case regex does not compile: %s%s" % (spec, e, usage))

    def check_world(self, size, cases):
        """Raises InjectError unless this plan can act in a world of `size` ranks running `cases`
        (runner.Case): its rank is one of the world's and its regex selects one of the cases. A plan
        that reaches nothing would let a self-test pass without injecting."""
        if not self.spec:
            return
        if self.rank >= size:
            raise InjectError("GPUCTS_INJECT='%s': rank %d is not in this world of %d rank(s) (0 to %d)"
                              % (self.spec, self.rank, size, size - 1))
        if not any(self.regex.search(c.suite + "." + c.name) for c in cases):
            raise InjectError("GPUCTS_INJECT='%s': the case regex selects none of this world's %d case(s) "
                              "(it is searched in <Suite>.<name>, e.g. Collectives.barrier)" % (self.spec, len(cases)))

    def _matches(self, suite, name, rank):
        if self.regex is None or not self.regex.search(suite + "." + name):
            return False
        return self.rank < 0 or self.rank == rank

    def selects(self, suite, name, rank):
        """True when this rank changes a value in case suite/name."""
        return self.action == "corrupt" and self._matches(suite, name, rank)

    def raises_in(self, suite, name, rank):
        """True when this rank leaves case suite/name by raising as it starts."""
        return self.action == "raise" and self._matches(suite, name, rank)

    def hangs_in(self, suite, name, rank):
        """True when this rank never comes out of case suite/name."""
        return self.action == "hang" and self._matches(suite, name, rank)

    def element(self, numel):
        """The element to change in a result of numel elements, or None when beyond it."""
        if numel <= 0:
            return None
        k = numel - 1 if self.last else self.index
        return k if k < numel else None


def plan_from_env():
    return InjectPlan(os.environ.get("GPUCTS_INJECT", ""))


def flip_element(tensor, k):
    """Flips every bit of element k of a contiguous tensor, in place (any dtype)."""
    import torch
    flat = tensor.view(-1)
    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[flat.element_size()]
    view = flat.view(ints) if flat.dtype != ints else flat
    view[k : k + 1].bitwise_not_()
