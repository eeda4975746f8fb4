{#- The Hydra join (seed document 001): re-key the values of a small side (`build`: key -> delimited
    values) through a large mapping side (`probe`: key -> group) and collect, per group, the
    distinct values of all its keys. Only keys present on both sides produce output.

    Cost: the build side is cleaned and collapsed to one row per key (a set of values) and, by
    default, broadcast; the probe side is read once (only its key and group columns) and each of
    its rows is looked up in that hash table, so probe rows whose key is not on the build side do
    no work beyond the scan and are never shuffled. Only matching rows reach the final grouping. -#}

{% macro collect_join(build, probe, key, values, group, separator=',', as_array=false, values_separator=',',
                      build_where=none, probe_where=none, strategy='broadcast', build_rows_per_key='many') %}
    {{ return(adapter.dispatch('collect_join', 'joinery')(build, probe, key, values, group, separator, as_array,
        values_separator, build_where, probe_where, strategy, build_rows_per_key)) }}
{% endmacro %}

{% macro default__collect_join(build, probe, key, values, group, separator, as_array, values_separator,
                               build_where, probe_where, strategy, build_rows_per_key) %}
    {% set keys = joinery._as_list(key, 'key', 'collect_join') %}
    {% do joinery._collect_join_check_arguments(values, group, separator, as_array, values_separator, build_where,
        probe_where, strategy, build_rows_per_key) %}
    {% set build_where = joinery._sql_expression(build_where) %}
    {% set probe_where = joinery._sql_expression(probe_where) %}
    {% if not execute %}
        {{ return('select * from ' ~ probe) }}
    {% endif %}
    {% set columns = joinery._collect_join_columns(build, probe, keys, values, group, values_separator) %}
    {% set join_hint = {'broadcast': '/*+ broadcast(build_sets) */', 'merge': '/*+ merge(build_sets) */',
                        'auto': ''}[strategy] %}

    with

    {{ joinery._collect_join_build_ctes(build, columns, build_where, build_rows_per_key) }},

    probe_side as (
        select
            {{ joinery._quoted_column_list(columns.probe_keys) }},
            {{ columns.quoted_group }}
        from {{ probe }}
        where {{ columns.quoted_group }} is not null
        {%- if probe_where is not none %}
            and ({{ probe_where }})
        {%- endif %}
    ),

    matched as (
        select {{ join_hint }}
            probe_side.{{ columns.quoted_group }},
            build_sets.joinery_values
        from probe_side
        inner join build_sets
            on {{ columns.join_condition | join(' and ') }}
    ),

    collected as (
        select
            {{ columns.quoted_group }},
            array_distinct(flatten(collect_set(joinery_values))) as joinery_values
        from matched
        group by {{ columns.quoted_group }}
    )

    select
        {{ columns.quoted_group }},
        {%- if as_array %}
        {{ joinery._collect_join_sorted_values() }} as {{ columns.quoted_values }}
        {%- else %}
        array_join({{ joinery._collect_join_sorted_values() }}, '{{ separator }}') as {{ columns.quoted_values }}
        {%- endif %}
    from collected
{% endmacro %}


{% macro _collect_join_check_arguments(values, group, separator, as_array, values_separator, build_where, probe_where,
    strategy, build_rows_per_key) %}
    {#- Fails on a bad argument of collect_join, naming it and what is allowed. -#}
    {% for argument, value in [('values', values), ('group', group)] if value is not string %}
        {{ joinery._raise_argument_error('collect_join', argument, value, 'expected one column name') }}
    {% endfor %}
    {% for argument, value in [('separator', separator), ('values_separator', values_separator)]
        if value is not string or value == '' or "'" in value or '\\' in value %}
        {{ joinery._raise_argument_error('collect_join', argument, value,
            'expected a non-empty string without quotes or backslashes') }}
    {% endfor %}
    {% if as_array not in [true, false] %}
        {{ joinery._raise_argument_error('collect_join', 'as_array', as_array, 'expected true or false') }}
    {% endif %}
    {% if strategy not in ['broadcast', 'merge', 'auto'] %}
        {{ joinery._raise_argument_error('collect_join', 'strategy', strategy,
            "expected 'broadcast' (default: the build side is small), 'merge' (both sides bucketed by the key) "
            ~ "or 'auto' (Spark decides)") }}
    {% endif %}
    {% if build_rows_per_key not in ['many', 'one'] %}
        {{ joinery._raise_argument_error('collect_join', 'build_rows_per_key', build_rows_per_key,
            "expected 'many' (default: a key has several build rows, collapsed to one set first) or 'one' "
            ~ "(about one build row per key: each row's values cleaned in place, no shuffle of the build side)") }}
    {% endif %}
    {% for argument, value in [('build_where', build_where), ('probe_where', probe_where)]
        if value is not none and (value is not string or value | trim == '') %}
        {{ joinery._raise_argument_error('collect_join', argument, value,
            'expected a boolean SQL expression or none') }}
    {% endfor %}
{% endmacro %}


{% macro _collect_join_columns(build, probe, keys, values, group, values_separator) %}
    {#- The resolved columns: build_keys, probe_keys, quoted_values, quoted_group, value_list (the
        values as an array expression) and join_condition (probe_side = build_sets, per key part). -#}
    {#- One `describe` per side for every check below. -#}
    {% set build_described = joinery._columns_of(build) %}
    {% set build_names = build_described | map(attribute='name') | list %}
    {% set probe_names = joinery._column_names(probe) %}
    {% set build_keys = joinery._require_columns(build, keys, 'key', 'collect_join', build_names) %}
    {% set probe_keys = joinery._require_columns(probe, keys, 'key', 'collect_join', probe_names) %}
    {% set values_column = joinery._require_columns(build, [values], 'values', 'collect_join', build_names)[0] %}
    {% set group_column = joinery._require_columns(probe, [group], 'group', 'collect_join', probe_names)[0] %}
    {% set values_type = (build_described
        | selectattr('name', 'equalto', values_column) | first).dtype | lower %}
    {% set quoted_values = joinery._quote_identifier(values_column) %}
    {% set quoted_group = joinery._quote_identifier(group_column) %}
    {% if values_type.startswith('array<') %}
        {% set value_list = quoted_values %}
    {% else %}
        {#- \Q...\E: the separator is split on literally, not as a regular expression. -#}
        {% set value_list = 'split(cast(' ~ quoted_values ~ " as string), '\\\\Q" ~ values_separator ~ "\\\\E')" %}
    {% endif %}
    {% set join_condition = [] %}
    {% for build_key in build_keys %}
        {% do join_condition.append('probe_side.' ~ joinery._quote_identifier(probe_keys[loop.index0])
            ~ ' = build_sets.' ~ joinery._quote_identifier(build_key)) %}
    {% endfor %}
    {{ return({'build_keys': build_keys, 'probe_keys': probe_keys, 'quoted_values': quoted_values,
        'quoted_group': quoted_group, 'value_list': value_list, 'join_condition': join_condition}) }}
{% endmacro %}


{% macro _collect_join_build_ctes(build, columns, build_where, build_rows_per_key) %}
    {#- The CTEs build_side, build_values and build_sets: the build side's values cleaned and, for
        'many', collapsed to one set per key. -#}
    {% set build_sql -%}
build_side as (
        select
            {{ joinery._quoted_column_list(columns.build_keys) }},
            {{ columns.quoted_values }}
        from {{ build }}
        {%- if build_where is not none %}
        where ({{ build_where }})
        {%- endif %}
    ),

    build_values as (
        select
            {{ joinery._quoted_column_list(columns.build_keys) }},
            {#- Every Unicode white space trimmed, not only the spaces `trim` removes: a tab, a CR
                (CRLF files), U+00A0 or U+2028 left on a value would be kept in the output and turn
                a numeric order into a string order. -#}
            regexp_replace(cast(exploded.joinery_value as string), '(?U)^\\s+|\\s+$', '') as joinery_value
        from build_side
        lateral view explode({{ columns.value_list }}) exploded as joinery_value
    ),

    {#- 'many': one row per key, so a matching probe row meets one small set, not every row of its key.
        'one': each build row's values cleaned in place, without the shuffle of a grouping; still
        right when a key has several rows (each is matched, the sets merge in `collected`). -#}
    build_sets as (
        {%- if build_rows_per_key == 'many' %}
        select
            {{ joinery._quoted_column_list(columns.build_keys) }},
            collect_set(joinery_value) as joinery_values
        from build_values
        where joinery_value != ''
        group by {{ joinery._quoted_column_list(columns.build_keys) }}
        {%- else %}
        select *
        from (
            select
                {{ joinery._quoted_column_list(columns.build_keys) }},
                filter(
                    transform({{ columns.value_list }}, v -> regexp_replace(cast(v as string), '(?U)^\\s+|\\s+$', '')),
                    v -> v != ''
                ) as joinery_values
            from build_side
        )
        where size(joinery_values) > 0
        {%- endif %}
    )
    {%- endset %}
    {{ return(build_sql) }}
{% endmacro %}


{% macro _collect_join_sorted_values() %}
    {#- Numeric order when every value of the group is an integer, else string order. The first
        branch is the common case (values that read back unchanged as a bigint): sorting longs is
        cheaper than matching a regex and comparing decimals (benchmarks/optimizations.md). -#}
    {% set sorted_values %}
        case
            when forall(joinery_values, v -> cast(try_cast(v as bigint) as string) <=> v)
                then transform(array_sort(transform(joinery_values, v -> cast(v as bigint))), n -> cast(n as string))
            when forall(joinery_values, v -> v rlike '^[+-]?[0-9]{1,38}\\z')
                then transform(
                    array_sort(transform(joinery_values, v -> named_struct('n', cast(v as decimal(38, 0)), 's', v))),
                    v -> v.s
                )
            else array_sort(joinery_values)
        end
    {% endset %}
    {{ return(sorted_values | trim) }}
{% endmacro %}


{% macro trailing_days(column, days, run_date, unit='epoch_millis') %}
    {{ return(adapter.dispatch('trailing_days', 'joinery')(column, days, run_date, unit)) }}
{% endmacro %}

{% macro default__trailing_days(column, days, run_date, unit) %}
    {#- A predicate for "`column` falls in the `days` days ending with `run_date`" (inclusive, whole
        UTC days), for the M days of attributes and N days of mappings of seed document 001. The
        bounds are literals, so Spark can skip files and partitions outside the window. -#}
    {% do joinery._validate_identifier(column, 'column', 'trailing_days') %}
    {% if days is not number or days < 1 or days != days | int %}
        {{ joinery._raise_argument_error('trailing_days', 'days', days, 'expected a whole number of days >= 1') }}
    {% endif %}
    {% if run_date is not string or not modules.re.match('^[0-9]{4}-[0-9]{2}-[0-9]{2}$', run_date) %}
        {{ joinery._raise_argument_error('trailing_days', 'run_date', run_date, 'expected a date as YYYY-MM-DD') }}
    {% endif %}
    {% set end_day = modules.datetime.datetime.strptime(run_date, '%Y-%m-%d').date() %}
    {% set first_day = end_day - modules.datetime.timedelta(days=days | int - 1) %}
    {% set after_day = end_day + modules.datetime.timedelta(days=1) %}
    {% set epoch = modules.datetime.date(1970, 1, 1) %}
    {% set quoted = joinery._quote_identifier(column) %}
    {% if unit in ['epoch_millis', 'epoch_seconds'] %}
        {% set per_day = 86400000 if unit == 'epoch_millis' else 86400 %}
        {{ return('(' ~ quoted ~ ' >= ' ~ (first_day - epoch).days * per_day ~ ' and ' ~ quoted ~ ' < '
            ~ (after_day - epoch).days * per_day ~ ')') }}
    {% elif unit in ['date', 'timestamp'] %}
        {{ return('(' ~ quoted ~ " >= " ~ unit ~ " '" ~ first_day ~ "' and " ~ quoted ~ " < " ~ unit ~ " '"
            ~ after_day ~ "')") }}
    {% else %}
        {{ joinery._raise_argument_error('trailing_days', 'unit', unit,
            "expected 'epoch_millis', 'epoch_seconds', 'date' or 'timestamp'") }}
    {% endif %}
{% endmacro %}
