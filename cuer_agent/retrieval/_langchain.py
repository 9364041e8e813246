"""LangChain interop: any `Retriever` as a langchain-core ``BaseRetriever``
(`as_langchain_retriever`) and any ``BaseRetriever`` as a `Retriever`
(`LangChainRetrieverAdapter`). langchain-core is imported on first use."""

from __future__ import annotations

import functools
import hashlib
from typing import TYPE_CHECKING, Any

from cuer_agent.retrieval._bm25 import Retriever
from cuer_agent.trace import Evidence, evidence_id

if TYPE_CHECKING:
    from langchain_core.retrievers import BaseRetriever


@functools.cache
def _langchain_class() -> type[BaseRetriever]:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class CuerLangChainRetriever(BaseRetriever):
        """A cuer-agent `Retriever` behind the langchain-core retriever interface."""

        retriever: Any
        k: int = 5

        def _get_relevant_documents(self, query: str, *,
                                    run_manager: CallbackManagerForRetrieverRun
                                    ) -> list[Document]:
            return [Document(page_content=e.text, id=e.id,
                             metadata={"id": e.id, "title": e.title, "rank": e.rank,
                                       "score": e.score})
                    for e in self.retriever.retrieve(query, self.k)]

    return CuerLangChainRetriever


def as_langchain_retriever(retriever: Retriever, k: int = 5) -> BaseRetriever:
    """Wrap a `Retriever` as a langchain-core ``BaseRetriever`` returning ``k`` Documents
    with ``metadata = {"id", "title", "rank", "score"}``."""
    return _langchain_class()(retriever=retriever, k=k)


class LangChainRetrieverAdapter:
    """Any langchain-core ``BaseRetriever`` as a `Retriever`.

    ``retrieve(query, k)`` calls ``invoke(query)`` and keeps the first ``k`` Documents (the
    wrapped retriever's own ``k`` must be at least as large). Per Document, in order:

    * id — ``metadata["id"]``; else ``Document.id``; else, when ``metadata["title"]`` is
      set, ``evidence_id(title, metadata.get("paragraph", 0), metadata.get("chunk", 0))``
      (the id our own chunks get, so such corpora keep their ids); else
      ``evidence_id("sha1:" + sha1(page_content), 0, 0)`` — stable for the same text.
    * title — ``metadata["title"]``, else the first non-empty line of the content.
    * rank — 1-based position; score — ``float(metadata["score"])`` if present, else 0.0.
    """

    def __init__(self, lc_retriever: BaseRetriever) -> None:
        self.lc_retriever = lc_retriever

    def retrieve(self, query: str, k: int) -> list[Evidence]:
        docs = self.lc_retriever.invoke(query)[: max(k, 0)]
        return [self._evidence(doc, rank) for rank, doc in enumerate(docs, start=1)]

    @staticmethod
    def _evidence(doc: Any, rank: int) -> Evidence:
        meta = doc.metadata or {}
        text: str = doc.page_content
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        title = str(meta.get("title") or (lines[0] if lines else ""))
        if meta.get("id") is not None:
            eid = str(meta["id"])
        elif getattr(doc, "id", None):
            eid = str(doc.id)
        elif meta.get("title"):
            eid = evidence_id(str(meta["title"]), int(meta.get("paragraph", 0)),
                              int(meta.get("chunk", 0)))
        else:
            eid = evidence_id("sha1:" + hashlib.sha1(text.encode("utf-8")).hexdigest(), 0, 0)
        score = float(meta["score"]) if meta.get("score") is not None else 0.0
        return Evidence(id=eid, title=title, text=text, rank=rank, score=score)

