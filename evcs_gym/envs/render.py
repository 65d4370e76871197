"""Drawing the pricing game: the road network with each station's prices and flows.

:func:`render_frame` draws with matplotlib's Agg canvas directly (no pyplot, no global
backend change) and returns an ``(H, W, 3)`` uint8 array: road links from
``NetworkData.links`` between ``NetworkData.node_xy`` (virtual sink nodes and connector
links hidden), each station as a disc sized by its vehicles charged and labelled with its
mean price and flow, and on the right the prices and flows per period.
:func:`show_frame` is the ``render_mode="human"`` path.

Example:
    >>> import evcs_gym
    >>> from evcs_gym.envs.render import render_frame
    >>> nd = evcs_gym.load_scenario("tiny")
    >>> frame = render_frame(nd, {"A": [1.0] * 4, "B": [1.5] * 4}, {"A": [5.0] * 4, "B": [0.0] * 4})
    >>> frame.shape, frame.dtype
    ((360, 720, 3), dtype('uint8'))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np

from evcs_gym.network import LINK_ROAD, NetworkData

if TYPE_CHECKING:  # matplotlib is imported when a frame is drawn
    from matplotlib.axes import Axes

__all__ = ["close_figure", "render_frame", "show_frame"]

FIGSIZE = (9.0, 4.5)
DPI = 80


def render_frame(
    network: NetworkData,
    prices: Mapping[str, Any] | None = None,
    flows: Mapping[str, Any] | None = None,
) -> np.ndarray:
    """An ``(H, W, 3)`` uint8 picture of ``network`` with optional prices and flows."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIGSIZE, dpi=DPI)
    canvas = FigureCanvasAgg(fig)
    grid = fig.add_gridspec(2, 2, width_ratios=(1.4, 1.0), hspace=0.45, wspace=0.25)
    ax_net = fig.add_subplot(grid[:, 0])
    ax_price = fig.add_subplot(grid[0, 1])
    ax_flow = fig.add_subplot(grid[1, 1])
    colors = [f"C{i % 10}" for i in range(network.n_agents)]
    _draw_network(ax_net, network, prices, flows, colors)
    _draw_series(ax_price, ax_flow, network, prices, flows, colors)
    canvas.draw()
    frame = np.asarray(canvas.buffer_rgba())[..., :3].copy()
    fig.clear()
    return frame


def _draw_network(
    ax: Axes,
    nd: NetworkData,
    prices: Mapping[str, Any] | None,
    flows: Mapping[str, Any] | None,
    colors: Sequence[str],
) -> None:
    xy = np.asarray(nd.node_xy, dtype=float)
    links = nd.links
    road = np.flatnonzero(np.asarray(links.kind) == LINK_ROAD)
    segments = [(xy[links.start[i]], xy[links.end[i]]) for i in road]
    if segments:
        from matplotlib.collections import LineCollection

        ax.add_collection(LineCollection(segments, colors="0.7", linewidths=1.0, zorder=1))
    real = ~np.asarray(nd.node_is_virtual, dtype=bool)
    ax.scatter(xy[real, 0], xy[real, 1], s=8, c="0.45", zorder=2)
    total = {a: float(np.sum(flows[a])) if flows is not None else 0.0 for a in nd.agent_names}
    biggest = max(total.values()) if total else 0.0
    for i, agent in enumerate(nd.agent_names):
        x, y = xy[nd.station_node[i]]
        size = 80.0 + (420.0 * total[agent] / biggest if biggest > 0 else 0.0)
        ax.scatter([x], [y], s=size, c=colors[i], edgecolors="k", zorder=3)
        if prices is not None:
            label = f"{agent}\n{np.mean(prices[agent]):.2f}/kWh\n{total[agent]:.0f} veh"
        else:
            lo, hi = nd.price_bounds[agent]
            label = f"{agent}\n[{lo:g}, {hi:g}]"
        ax.annotate(label, (x, y), textcoords="offset points", xytext=(8, 6), fontsize=8, zorder=4)
    ax.set_title(f"{nd.name}: stations (size = vehicles charged)", fontsize=9)
    ax.set_aspect("equal", adjustable="datalim")
    ax.autoscale_view()
    ax.margins(0.12)
    ax.set_xticks([])
    ax.set_yticks([])


def _draw_series(
    ax_price: Axes,
    ax_flow: Axes,
    nd: NetworkData,
    prices: Mapping[str, Any] | None,
    flows: Mapping[str, Any] | None,
    colors: Sequence[str],
) -> None:
    periods = np.arange(nd.n_periods)
    width = 0.8 / max(nd.n_agents, 1)
    for i, agent in enumerate(nd.agent_names):
        if prices is not None:
            ax_price.step(
                periods, np.asarray(prices[agent]), where="mid", color=colors[i], label=agent
            )
        if flows is not None:
            offset = (i - (nd.n_agents - 1) / 2) * width
            ax_flow.bar(periods + offset, np.asarray(flows[agent]), width=width, color=colors[i])
    lows = [lo for lo, _ in nd.price_bounds.values()]
    highs = [hi for _, hi in nd.price_bounds.values()]
    pad = 0.05 * max(max(highs) - min(lows), 1e-9)
    ax_price.set_ylim(min(lows) - pad, max(highs) + pad)
    ax_price.set_title("price per period (currency/kWh)", fontsize=9)
    ax_flow.set_title("vehicles starting to charge per period", fontsize=9)
    for ax in (ax_price, ax_flow):
        ax.set_xticks(periods)
        ax.tick_params(labelsize=7)
    if prices is not None and nd.n_agents <= 10:
        ax_price.legend(fontsize=6, loc="best", ncol=min(nd.n_agents, 4), framealpha=0.6)
    if prices is None:
        ax_price.text(
            0.5, 0.5, "no prices yet", ha="center", va="center", transform=ax_price.transAxes
        )


def _interactive_backend() -> bool:
    import matplotlib

    backend = matplotlib.get_backend()
    try:
        from matplotlib.backends import BackendFilter, backend_registry

        return backend.lower() in {
            b.lower() for b in backend_registry.list_builtin(BackendFilter.INTERACTIVE)
        }
    except ImportError:  # matplotlib < 3.9
        from matplotlib import rcsetup

        legacy: Any = rcsetup  # `interactive_bk` is gone from the stubs of matplotlib >= 3.9
        return backend.lower() in {b.lower() for b in legacy.interactive_bk}


def show_frame(frame: np.ndarray, fig: Any, path: Path | None, fps: float) -> Any:
    """``render_mode="human"``: save ``frame`` to ``path`` if given and show it if possible.

    Returns the pyplot figure to reuse on the next call (``None`` when nothing is shown).
    """
    if path is not None:
        from matplotlib.image import imsave

        imsave(str(path), frame)
    if not _interactive_backend():
        if path is None:
            gymnasium.logger.warn(
                "render_mode='human' with the non-interactive matplotlib backend "
                f"{__import__('matplotlib').get_backend()!r}: nothing shown; pass "
                "render_path=... to save the frames"
            )
        return None
    import matplotlib.pyplot as plt

    if fig is None or not plt.fignum_exists(fig.number):
        fig = plt.figure("evcs-gym", figsize=FIGSIZE)
        fig.add_axes((0, 0, 1, 1)).set_axis_off()
    ax = fig.axes[0]
    ax.clear()
    ax.set_axis_off()
    ax.imshow(frame)
    plt.pause(1.0 / fps)
    return fig


def close_figure(fig: Any) -> None:
    """Close a figure opened by :func:`show_frame`."""
    import matplotlib.pyplot as plt

    plt.close(fig)
