"""Schema changes on the mirrors: what one DDL does to them (``plan``), applying those steps exactly
once (``apply``), and a micro-batch's DDL rows turned into mirror changes (``batch``).
"""

from __future__ import annotations

from sluice.spark.ddl.apply import MirrorDdl
from sluice.spark.ddl.batch import DdlStage
from sluice.spark.ddl.plan import MirrorStep, plan_ddl

__all__ = ["DdlStage", "MirrorDdl", "MirrorStep", "plan_ddl"]
