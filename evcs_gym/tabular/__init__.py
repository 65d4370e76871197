"""The stage game tabulated on a price grid: finite games exactly solved, for tabular learners.

* :mod:`~evcs_gym.tabular.grid`: :class:`PriceGrid`, ``m`` price profiles per station,
  and Calvano's grid on the path from the Nash to the collusive reference
  (:func:`calvano_grid`);
* :mod:`~evcs_gym.tabular.table`: :class:`PayoffTable`, every station's reward at every
  joint profile of a grid, and the grid game's exact NashConv, pure equilibria and
  joint optimum;
* :mod:`~evcs_gym.tabular.tabulate`: :func:`simulator_table`, a game's table evaluated in
  the simulator once (on a pool) and kept in the disk cache;
* :mod:`~evcs_gym.tabular.logit`: :class:`LogitMarket`, Calvano et al.'s logit market in
  closed form, and the same market as a scenario folder the simulator plays.
"""

from __future__ import annotations

from evcs_gym.tabular.grid import PriceGrid, calvano_grid, path_levels
from evcs_gym.tabular.logit import LogitMarket
from evcs_gym.tabular.table import PayoffTable
from evcs_gym.tabular.tabulate import game_digest, save_table, simulator_table, table_key

__all__ = [
    "LogitMarket",
    "PayoffTable",
    "PriceGrid",
    "calvano_grid",
    "game_digest",
    "path_levels",
    "save_table",
    "simulator_table",
    "table_key",
]
