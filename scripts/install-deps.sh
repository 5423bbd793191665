#!/usr/bin/env bash
# Installs mksim's build and test dependencies from Debian packages; a no-op when they are present.
set -euo pipefail
PKGS=(
  build-essential cmake pkg-config
  libsimgrid-dev libjemalloc-dev
  libhdf5-dev hdf5-tools
  libboost-program-options-dev
  libgtest-dev googletest
  nlohmann-json3-dev libeigen3-dev libginac-dev
  libopenmpi-dev openmpi-bin
  gfortran
  libopen-trace-format2-dev libdw-dev
  python3 time
  python3-h5py python3-pandas
  chromium
  pajeng
  lammps lammps-examples hpcc stress-ng
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm comes with Node.js; Debian's nodejs and npm unless some node with npm is already there.
command -v npm >/dev/null || missing+=(nodejs npm)
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# mksim report's plotting library (results/README.md): Vega-Lite from npm (Debian has vega only), pinned, into the
# directory CMake's MKSIM_VEGA_DIR points at by default; and playwright-core (the report test drives Debian's
# chromium with it to move the model explorer's controls). playwright-core 1.61.1 is the last release that runs on
# Debian 12's Node.js 18 (1.62 on refuse anything below 20). A no-op when all four are there at these versions.
JS_DIR=/usr/local/share/mksim/js
JS_PKGS=(vega@6.4.0 vega-lite@6.4.3 vega-embed@7.3.0 playwright-core@1.61.1)
js_missing=()
for spec in "${JS_PKGS[@]}"; do
  name=${spec%@*} version=${spec##*@}
  grep -q "\"version\": *\"$version\"" "$JS_DIR/node_modules/$name/package.json" 2>/dev/null || js_missing+=("$spec")
done
if [ ${#js_missing[@]} -eq 0 ]; then
  echo "install-deps: Vega-Lite and playwright-core present in $JS_DIR"
else
  echo "install-deps: installing ${js_missing[*]} into $JS_DIR (npm)"
  $SUDO mkdir -p "$JS_DIR"
  $SUDO npm install --prefix "$JS_DIR" --no-audit --no-fund --loglevel=error "${JS_PKGS[@]}"
fi
