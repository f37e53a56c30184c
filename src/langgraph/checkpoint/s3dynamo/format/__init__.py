"""The stored format, in plain typed values and pure functions (no I/O):

    layout.py           the grammar of every partition, sort key and object key:
                        threads', the Store's and the node cache's, data subjects'
    schema.py           the table's keys and indexes
    records.py          a thread's records and control items, as items
    catalog_records.py  the thread catalog's items
    subject_records.py  a data subject's fence, key and erasure records

How each is written, and in which order, is its store's (`store/format.py`,
`memory/format.py`); docs/FORMAT.md describes it for readers of the bytes.
"""
