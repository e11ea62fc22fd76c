"""The parts of the handler walk, one job each; `keep_sdk.validator.walker` assembles them.

`state` holds what one handler's walk knows and declares the methods the
parts call on each other; `flow` the path states; `dispatch` the node-type
tables; `limits` the budgets; `bindings`, `values`, `statements`, `loops`,
`exceptions`, `expressions`, `literals`, `writes`, `calls` and `mutations`
implement the walk of each kind of syntax.
"""

__all__: list[str] = []
