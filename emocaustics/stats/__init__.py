"""Task-neutral statistics: the same functions serve machine score tables and human ratings.

- `bootstrap`: resampling items (or whole clusters of items: `cluster_index`), bootstrap means and percentile
  intervals (many rows at once, seeded).
- `paired`: paired bootstrap, approximate randomisation, Wilcoxon signed-rank, Holm's correction.
- `pairsums`: the shared engine that resamples all configurations and all their pairs in one pass.
- `threads`: the BLAS thread limit of the resampling products (one by default; `EMOCAUSTICS_STATS_THREADS`).
- `mannwhitney`: one-sided Mann-Whitney U and its ordered-pairs matrix (imported from its module, as `correlation`).
- `correlation`: Pearson / Spearman / Kendall and the Pearson-above / Spearman-below matrix. Both load scipy.stats
  (~0.7 s), which no run's one-config table needs: this package names neither (start-up, issue 55).
- `matrix`: significance matrices as frames and heat maps.
- `tables`: `config_stats(per_item)` -> (ci_table, pairs_table), called under every score table; `holm_family`
  (Holm over the pairs a reader draws conclusions from). The terminal's text of the pairs is
  `report.compare.describe`'s.
"""

from emocaustics.stats.bootstrap import (bootstrap_masked_means, bootstrap_means, bootstrap_table, cluster_index,
                                         percentile_interval)
from emocaustics.stats.matrix import matrix_from_pairs, plot_significance, significance_frame
from emocaustics.stats.paired import holm, paired_bootstrap_p, randomisation_table, wilcoxon_p
from emocaustics.stats.tables import ConfigStats, config_matrix, config_stats, holm_family

__all__ = [
    "ConfigStats", "bootstrap_masked_means", "bootstrap_means", "bootstrap_table", "cluster_index", "config_matrix",
    "config_stats", "holm", "holm_family", "matrix_from_pairs", "paired_bootstrap_p", "percentile_interval",
    "plot_significance", "randomisation_table", "significance_frame", "wilcoxon_p",
]
