"""A saver's configuration and the checks of what callers pass:

settings.py         every setting, from arguments or the environment (`Settings`)
arguments.py        the vocabulary of argument checks the facades declare
memory_arguments.py the Store's and the node cache's own: namespaces, ops, cache keys
runnable_config.py  what a LangGraph config names: thread, namespace, checkpoint
keywords.py         unknown or misspelled keyword arguments, named
aws_names.py        table, bucket and region names AWS would refuse
"""
