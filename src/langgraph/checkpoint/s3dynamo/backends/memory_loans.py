"""Loans and borrowings in memory, as `dynamodb_loans.py` keeps them in the table."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection

from langgraph.checkpoint.s3dynamo.layout import borrow_sk, control_pk, loan_borrower, loans_prefix
from langgraph.checkpoint.s3dynamo.records import ItemKey, Loan, loan_parts


class LoansTwin:
    """Loans by key (leaves), borrowings by key; the host holds the lock and counts."""

    _lock: threading.Lock
    _count: Callable[[str], None]
    loan_items: dict[ItemKey, set[str]]
    borrowings: set[ItemKey]

    def lend(self, lender: str, borrower: str, leaves: Collection[str]) -> None:
        for key, part in loan_parts(lender, borrower, leaves):
            with self._lock:
                self._count("update_item")
                self.loan_items.setdefault(key, set()).update(part)

    def unlend(self, loan: Loan, leaves: Collection[str]) -> None:
        taken = set(leaves) & loan.leaves
        if taken:
            with self._lock:
                self._count("update_item")
                self.loan_items.get(loan.key, set()).difference_update(taken)

    def loans(self, lender: str, borrower: str | None = None) -> list[Loan]:
        pk, prefix = control_pk(lender), loans_prefix(borrower)
        with self._lock:
            self._count("query")
            return [
                Loan(k, loan_borrower(k.sk), frozenset(leaves))
                for k, leaves in sorted(self.loan_items.items())
                if k.pk == pk and k.sk.startswith(prefix)
            ]

    def control_keys(self, thread_name: str) -> list[ItemKey]:
        pk = control_pk(thread_name)
        with self._lock:
            self._count("query")
            keys = [*self.heads, *self.leases, *self.loan_items, *self.borrowings]  # type: ignore[attr-defined]
            return sorted(k for k in keys if k.pk == pk)

    def put_borrowing(self, borrower: str, lender: str) -> None:
        with self._lock:
            self._count("put_item")
            self.borrowings.add(ItemKey(control_pk(borrower), borrow_sk(lender)))
