"""Helpers shared by the benchmark scripts of bench/ (standard library only)."""
import os
import sys
import time


def logger(name):
    """A function that prints '[name HH:MM:SS] message' to stderr at once."""
    def log(msg):
        sys.stderr.write("[%s %s] %s\n" % (name, time.strftime("%H:%M:%S"), msg))
        sys.stderr.flush()
    return log


def mpi_env():
    """The environment with OpenMPI allowed to run as root (as on CI and this machine)."""
    e = dict(os.environ)
    e["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    e["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return e
