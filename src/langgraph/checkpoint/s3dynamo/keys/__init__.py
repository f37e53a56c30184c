"""What seals and names every stored blob, and whose key it is:

    keyring.py       the deployment's keys (`Keyring`) and where they come from
    kms_keyring.py   a KMS deployment's keys, wrapped by KMS in its own partition
    naming.py        keyed hashes: every partition, sort key and object name
    identities.py    what a blob stands for (`CheckpointAt`, `ValueAt`, `WriteAt`)
    codec.py         which identity each kind of thread blob is sealed to
    subjects.py      data subjects and the key each one's data is sealed under

The envelope itself (compress, encrypt, frame) is the blob engine's (`blobs/sealing.py`).
"""
