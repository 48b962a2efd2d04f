"""The frontier service: discovery in, admitted crawl tasks out (see ``service``)."""

from control_plane.frontier.service import Frontier

__all__ = ["Frontier"]
