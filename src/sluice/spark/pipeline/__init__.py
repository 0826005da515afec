"""``sluice run``'s pipeline: the streaming query and the driver's commit of each micro-batch
(``runner``), the reading of a staged batch (``staged_batch``), its progress (``stats``) and its
Prometheus metrics (``metrics``).
"""

from __future__ import annotations

from sluice.spark.pipeline.runner import Pipeline, PipelineConfig
from sluice.spark.pipeline.stats import PipelineStats

__all__ = ["Pipeline", "PipelineConfig", "PipelineStats"]
