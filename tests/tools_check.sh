#!/usr/bin/env bash
# Every program the test suite and the demo run is installed and works (issue 19): the tests that need one skip
# without it, so a missing tool would otherwise only show as a skipped test. scripts/install-deps.sh installs them.
set -u
fail=0
need() {  # need PACKAGE DESCRIPTION COMMAND...
  local pkg=$1 what=$2; shift 2
  if ! "$@" > /dev/null 2>&1; then
    echo "missing: $what (\`$*\` failed; apt-get install $pkg, which scripts/install-deps.sh lists)"
    fail=1
  fi
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
printf 'program p\nend program p\n' > "$tmp/p.f90"
printf '#include <mpi.h>\nint main(int c, char** v) { MPI_Init(&c, &v); MPI_Finalize(); return 0; }\n' > "$tmp/p.c"
need openmpi-bin "OpenMPI's mpirun" mpirun --version
need libopenmpi-dev "OpenMPI's C wrapper compiler" mpicc -o "$tmp/c" "$tmp/p.c"
need gfortran "a Fortran compiler for mpifort (the Fortran trace test)" mpifort -o "$tmp/f" "$tmp/p.f90"
need libsimgrid-dev "SimGrid's smpicc (SMPI builds of the reference programs)" smpicc -o "$tmp/s" "$tmp/p.c"
need libsimgrid-dev "SimGrid's smpirun" smpirun -version
need chromium "headless Chromium (the report test)" chromium --version
need pajeng "PajeNG's pj_dump (the Paje export test)" pj_dump --help
need time "GNU time (peak memory in tests and benchmarks)" /usr/bin/time -f %M true
need binutils "strip (the stripped-executable trace test)" strip --version
need "python3-h5py python3-pandas" "Python with h5py and pandas (the sweep table test)" /usr/bin/python3 -c 'import h5py, pandas'
if [ "$fail" -eq 0 ]; then echo "tools: every program the tests use is here"; fi
exit "$fail"
