"""Layer 6, experiments: data sets x methods x repeated splits with model selection on kernel stacks, resumable.

:mod:`~multikernel.experiments.config` is the experiment configuration; :mod:`~multikernel.experiments.runner`
plans, runs (in parallel, resumable) and summarizes; :mod:`~multikernel.experiments.units` runs one split
through the fit core; :mod:`~multikernel.experiments.model_selection` is cross-validation over a grid on a
precomputed stack with warm starts; :mod:`~multikernel.experiments.report` makes tables and figures;
:mod:`~multikernel.experiments.kinds` runs the figure experiments on arrays.
"""
