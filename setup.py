"""Packaging for coflowemu: a coflow emulator with an SDN controller."""
from setuptools import find_packages, setup

setup(
    name="coflowemu",
    version="0.1.0",
    description="Network coflow emulator and simulator with an SDN controller",
    python_requires=">=3.11",
    # every package under the four top-level folders (a hand-kept list missed new ones)
    packages=find_packages(include=["topologies*", "controller*", "emulate*",
                                    "experiments*"]),
    install_requires=[
        "numpy>=1.26",
        "scipy>=1.11",
        # highspy: incremental row addition and warm starts for the cutting-plane LPs
        # (scipy's linprog re-solves from scratch every round).
        "highspy>=1.7",
        "networkx>=3.2",
        "click>=8.1",
        "matplotlib>=3.8",
        "tqdm>=4.66",
        # numba: the simulator's inner event loop; pure-Python per-event overhead makes
        # a 700k-flow trace take minutes instead of seconds.
        "numba>=0.59",
        # sweeps (experiments/sweep): runs as Dask tasks on a local or remote cluster,
        # results as Parquet files queried with DuckDB (pandas for data frames);
        # specs are TOML, read by the standard library's tomllib (Python >= 3.11).
        "dask[distributed]>=2024.1",
        "pyarrow>=15",
        "duckdb>=1.0",
        "pandas>=2.1",
    ],
    extras_require={
        "emulation": [
            # os-ken: maintained Ryu fork; Ryu 4.34 does not run on Python 3.11.
            "os-ken>=4.2",
            # The PyPI wheel is pure Python; Debian's mininet package provides mnexec.
            # Pinned: it is the only release on PyPI that matches Debian's Mininet 2.3.
            "mininet==2.3.0.dev6",
        ],
        # pytest-xdist: make test runs the tests that do not emulate on every CPU;
        # pytest-rerunfailures: an emulation case that misses runs again, up to twice
        # (tests/conftest.py; its flaky mark takes only_rerun since 14)
        "test": ["pytest>=8", "hypothesis>=6.100", "pytest-xdist>=3.5",
                 "pytest-rerunfailures>=14"],
    },
    entry_points={"console_scripts": ["coflowemu=emulate.cli:main"]},
)
