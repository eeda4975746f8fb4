{#- The Hydrator joiner (seed document 000): N inputs joined on one (composite) key, inner / outer
    with required inputs / cross, with the output schema chosen by select, rename, drop or qualify.
    Docs: macros/multi_join/multi_join.yml and docs/multi_join.md. -#}

{% macro multi_join(inputs, keys=none, join_type='inner', required=none, select=none, rename=none, drop=none,
                    qualify=false, hints=none, full_join_plan='chain', null_keys='distinct') %}
    {{ return(adapter.dispatch('multi_join', 'joinery')(
        inputs, keys, join_type, required, select, rename, drop, qualify, hints, full_join_plan, null_keys)) }}
{% endmacro %}


{% macro default__multi_join(inputs, keys, join_type, required, select, rename, drop, qualify, hints,
                              full_join_plan='chain', null_keys='distinct') %}
    {% if not execute %}
        {#- Parse time: no columns are known yet and the refs in the arguments are already registered.
            Checking nothing here keeps one model's bad arguments from failing the whole project's
            parse; every check runs when the model compiles. -#}
        {{ return('select 1 as joinery_multi_join_placeholder') }}
    {% endif %}
    {% set plan = joinery._multi_join_plan(inputs, keys, join_type, required, select, rename, drop, qualify, hints,
                                          full_join_plan, null_keys) %}
    {% if plan.strategy == 'grouped' %}
        {{ return(joinery._multi_join_grouped_sql(plan)) }}
    {% endif %}
    {{ return(joinery._multi_join_chain_sql(plan)) }}
{% endmacro %}


{% macro _multi_join_alias(name) %}
    {{ return(joinery._quote_identifier(name)) }}
{% endmacro %}


{% macro _multi_join_hint(plan) %}
    {% set hints = [] %}
    {% for name in plan.names if name in plan.hints %}
        {% do hints.append(plan.hints[name] | upper ~ '(' ~ joinery._multi_join_alias(name) ~ ')') %}
    {% endfor %}
    {{ return('/*+ ' ~ hints | join(', ') ~ ' */ ' if hints else '') }}
{% endmacro %}


{% macro _multi_join_chain_sql(plan) %}
    {#- Inner, left, right, outer with required inputs, and cross: a chain of joins from the first
        required input (the driver). Every join condition compares the driver's key, so the output
        of each join stays partitioned on that key and Spark shuffles each input once. The driver
        is required, so its key is the join key of every output row (coalescing would add nothing).
        Full joins (no input required) chain from the first input, each joining on the key coalesced
        over the inputs before it; the output key is coalesced over all inputs. With NULL-equal keys
        each condition is `<=>`, which Spark still plans as an equi-join (on coalesce(key, default)
        and isnull(key)), so the partitioning, and the one shuffle per input, are kept. record_metrics
        reads the joins back from this shape (_metric_chain_joins): change the two together. -#}
    {% set driver = plan.driver %}
    {% set driver_alias = joinery._multi_join_alias(driver) %}
    {% set full = plan.strategy == 'full_chain' %}
    {% set equals = ' <=> ' if plan.null_keys == 'equal' else ' = ' %}
    {% set key_sql = [] %}
    {% for key in (plan['keys'][driver] or []) %}
        {% do key_sql.append(joinery._multi_join_coalesced_key(plan, plan.names if full else [driver], loop.index0)) %}
    {% endfor %}
    {% set columns = [] %}
    {% for item in plan.outputs %}
        {% if item.key_index is not none %}
            {% set source = key_sql[item.key_index] %}
        {% else %}
            {% set source = joinery._multi_join_alias(item.input) ~ '.' ~ joinery._quote_identifier(item.column) %}
        {% endif %}
        {% do columns.append(joinery._select_item(source, item.name)) %}
    {% endfor %}
    {% set lines = [
        ('select ' ~ joinery._multi_join_hint(plan)) | trim,
        '    ' ~ columns | join(',\n    '),
        'from ' ~ plan.relations[driver] ~ ' as ' ~ driver_alias] %}
    {% set joined = [driver] %}
    {% for name in plan.names if name != driver %}
        {% set alias = joinery._multi_join_alias(name) %}
        {% if plan.strategy == 'cross' %}
            {% do lines.append('cross join ' ~ plan.relations[name] ~ ' as ' ~ alias) %}
        {% else %}
            {% set conditions = [] %}
            {% for key in plan['keys'][name] %}
                {% set before = joinery._multi_join_coalesced_key(plan, joined if full else [driver], loop.index0) %}
                {% do conditions.append(before ~ equals ~ alias ~ '.' ~ joinery._quote_identifier(key)) %}
            {% endfor %}
            {% set kind = 'full' if full else ('inner' if name in plan.required else 'left') %}
            {% do lines.append(kind ~ ' join ' ~ plan.relations[name] ~ ' as ' ~ alias) %}
            {% do lines.append('    on ' ~ conditions | join('\n    and ')) %}
        {% endif %}
        {% do joined.append(name) %}
    {% endfor %}
    {{ return(lines | join('\n')) }}
{% endmacro %}


{% macro _multi_join_coalesced_key(plan, names, index) %}
    {#- Key column `index` of the inputs `names`, coalesced over them when there are several: the
        chain's output key (over every input in a full chain) and the left side of each join's
        condition (over the inputs joined before it in a full chain), built alike. -#}
    {% set parts = [] %}
    {% for name in names %}
        {% do parts.append(joinery._multi_join_alias(name) ~ '.'
            ~ joinery._quote_identifier(plan['keys'][name][index])) %}
    {% endfor %}
    {{ return('coalesce(' ~ parts | join(', ') ~ ')' if parts | length > 1 else parts[0]) }}
{% endmacro %}


{% macro _multi_join_grouped_sql(plan) %}
    {#- A join with no required input (full outer): the reduce-side join of the Hydrator document.
        Every input's rows, tagged by input, are grouped by the key in one shuffle; each group's rows
        per input are then multiplied out (an input without rows for the key gives one NULL row).
        Chained full joins would instead re-shuffle each intermediate result on coalesce(key, ...).
        With null_keys='distinct' a row with a NULL in its key matches nothing: it gets a group of its
        own. With 'equal', GROUP BY already puts NULL key parts together. record_metrics reads the
        join back from this shape (_metric_grouped_joins): change the two together. -#}
    {% set n_keys = plan['keys'][plan.names[0]] | length %}
    {% set fields = joinery._multi_join_grouped_fields(plan) %}
    {% set branches = [] %}
    {% for name in plan.names %}
        {% do branches.append(joinery._multi_join_tagged_branch(plan, name, fields)) %}
    {% endfor %}

    {% set group_keys = [] %}
    {% for index in range(n_keys) %}
        {% do group_keys.append('`joinery_key_' ~ index ~ '`') %}
    {% endfor %}
    {% set lists = [] %}
    {% set explodes = [] %}
    {% for name in plan.names %}
        {% do lists.append('collect_list(`joinery_row_' ~ loop.index0 ~ '`) as `joinery_rows_' ~ loop.index0 ~ '`') %}
        {% do explodes.append('lateral view outer explode(`joinery_rows_' ~ loop.index0 ~ '`) `joinery_exploded_'
            ~ loop.index0 ~ '` as `joinery_row_' ~ loop.index0 ~ '`') %}
    {% endfor %}

    {% set columns = [] %}
    {% for item in plan.outputs %}
        {% if item.key_index is not none %}
            {% do columns.append('`joinery_key_' ~ item.key_index ~ '` as ' ~ joinery._quote_identifier(item.name)) %}
        {% else %}
            {% do columns.append('`joinery_row_' ~ plan.names.index(item.input) ~ '`.`c'
                ~ fields[item.input].index(item.column) ~ '` as ' ~ joinery._quote_identifier(item.name)) %}
        {% endif %}
    {% endfor %}

    {% set sql = [
        'with',
        '',
        'joinery_tagged as (',
        branches | join('\n    union all\n'),
        '),',
        '',
        'joinery_grouped as (',
        '    select',
        '        ' ~ (group_keys + lists) | join(',\n        '),
        '    from joinery_tagged',
        '    group by ' ~ (group_keys + (['`joinery_null_key`'] if plan.null_keys == 'distinct' else [])) | join(', '),
        ')',
        '',
        'select',
        '    ' ~ columns | join(',\n    '),
        'from joinery_grouped',
        explodes | join('\n')] | join('\n') %}
    {{ return(sql | trim) }}
{% endmacro %}

{% macro _multi_join_grouped_fields(plan) %}
    {#- Per input, the columns the output needs from it besides the key: in the grouped join each
        input's row travels as a struct of these, fields c0, c1, ... in this order. -#}
    {% set fields = {} %}
    {% for name in plan.names %}
        {% set own = [] %}
        {% for item in plan.outputs if item.input == name and item.key_index is none and item.column not in own %}
            {% do own.append(item.column) %}
        {% endfor %}
        {% do fields.update({name: own}) %}
    {% endfor %}
    {{ return(fields) }}
{% endmacro %}


{% macro _multi_join_tagged_branch(plan, name, fields) %}
    {#- One input's branch of joinery_tagged: its key as joinery_key_<i>, its row as the struct
        joinery_row_<its position> and NULL for every other input's row; with null_keys='distinct',
        a key with a NULL part gets a group of its own (joinery_null_key). -#}
    {% set position = plan.names.index(name) %}
    {% set alias = joinery._multi_join_alias(name) %}
    {% set items = [] %}
    {% set null_checks = [] %}
    {% for key in plan['keys'][name] %}
        {% do items.append(alias ~ '.' ~ joinery._quote_identifier(key) ~ ' as `joinery_key_' ~ loop.index0 ~ '`') %}
        {% do null_checks.append(alias ~ '.' ~ joinery._quote_identifier(key) ~ ' is null') %}
    {% endfor %}
    {% if plan.null_keys == 'distinct' %}
        {% do items.append('case when ' ~ null_checks | join(' or ') ~ ' then named_struct(\'input\', ' ~ position
            ~ ', \'row\', monotonically_increasing_id()) end as `joinery_null_key`') %}
    {% endif %}
    {% for other in plan.names %}
        {% if other == name %}
            {% set struct_fields = ["'present', true"] %}
            {% for column in fields[name] %}
                {% do struct_fields.append("'c" ~ loop.index0 ~ "', " ~ alias ~ '.' ~ joinery._quote_identifier(column)) %}
            {% endfor %}
            {% do items.append('named_struct(' ~ struct_fields | join(', ') ~ ') as `joinery_row_' ~ loop.index0 ~ '`') %}
        {% else %}
            {% do items.append('null as `joinery_row_' ~ loop.index0 ~ '`') %}
        {% endif %}
    {% endfor %}
    {% set select_sql = '    select\n        ' ~ items | join(',\n        ') %}
    {{ return(select_sql ~ '\n    from ' ~ plan.relations[name] ~ ' as ' ~ alias) }}
{% endmacro %}
