"""Review queues (issue 31, item 3): a saved selection of turns or branch points (failed turns
of a window, a label, a search, the branch points of a persona's sessions) walked one item at a
time with the keyboard: see, label, score, prefer, next. Its progress is shared: an item one
reviewer has done is not handed to the next, and two reviewers at once never get the same item
(a claim is taken by a conditional update, never a lock held open).

A room of its own: it needs the ledger (sessions), the index (search) and the annotations, and
none of them imports it."""
