"""Per-domain scope and page budgets: the frontier's admission rules that come from fetch profiles.

Two questions, asked by :mod:`.admission` for each URL it considers:

- :meth:`SiteRules.rejection`: is the URL out of its domain's profile scope (allow and deny
  patterns, trap limits)? Counted as ``out_of_scope``.
- :meth:`SiteRules.take`: has the job room left in the domain's page budget (the profile's
  ``page_budget``, the job's ``domain_budget``, the tighter of the two)? If so the page is taken
  from it; if not the URL is counted ``over_limit``, like the job's ``max_pages``.

The pages each job took per budgeted domain are rows of the shard's state (``site_pages``), so they
go to the shard's changelog with the pass that took them and survive a restart or a takeover: a
frontier started again does not hand a domain a second budget. A message that fails rolls them
back with the rest of its changes. Domains without a budget write nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from dualplane.brokers.amqp.messages import JobSpec
from dualplane.core.web.site_scope import SiteScope, budget_of

if TYPE_CHECKING:
    from dualplane.control_plane.frontier.store import FrontierState

TABLE = "site_pages"
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    id TEXT PRIMARY KEY,
    job_id TEXT NOT NULL,
    domain TEXT NOT NULL,
    pages INTEGER NOT NULL
) WITHOUT ROWID;
"""


class ScopeSource(Protocol):
    """Where a domain's profile scope comes from (:class:`~.site_scopes.SiteScopes`)."""

    def scope(self, domain: str) -> SiteScope | None: ...


class NoProfiles:
    """No profiles followed (a frontier built for a test): every domain is unlimited."""

    def scope(self, domain: str) -> SiteScope | None:
        return None


class SiteRules:
    """The domain rules of one shard, on its state (see the module docstring)."""

    def __init__(self, state: FrontierState, scopes: ScopeSource) -> None:
        self.state = state
        self.scopes = scopes

    def rejection(self, url: str, domain: str, depth: int) -> str | None:
        scope = self.scopes.scope(domain)
        return None if scope is None else scope.rejection(url, depth)

    def budget(self, job: JobSpec, domain: str) -> int | None:
        scope = self.scopes.scope(domain)
        return budget_of(job.domain_budget, scope.page_budget if scope else None)

    def taken(self, job_id: str, domain: str) -> int:
        """Pages of ``domain`` admitted for the job so far (counted for budgeted domains only)."""
        query = f"SELECT pages FROM {TABLE} WHERE id = ?"
        row = self.state.db.execute(query, (_key(job_id, domain),)).fetchone()
        return int(row[0]) if row else 0

    def has_room(self, job: JobSpec, domain: str) -> bool:
        budget = self.budget(job, domain)
        return budget is None or self.taken(job.job_id, domain) < budget

    def take(self, job: JobSpec, domain: str) -> None:
        """Count one more admitted page of ``domain`` for ``job``, if the domain has a budget."""
        if self.budget(job, domain) is None:
            return
        key = _key(job.job_id, domain)
        pages = self.taken(job.job_id, domain) + 1
        self.state.db.execute(
            f"INSERT INTO {TABLE} (id, job_id, domain, pages) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET pages = excluded.pages",
            (key, job.job_id, domain, pages),
        )
        self.state.written(TABLE, key, {"id": key, "job_id": job.job_id, "domain": domain, "pages": pages})


def _key(job_id: str, domain: str) -> str:
    return f"{job_id} {domain}"
