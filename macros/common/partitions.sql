{#- Partition values as SQL and back: joinery_upsert and compact both list the partitions a set of
    rows falls in (as strings, one pass over the rows) and write a literal predicate for them, so
    that Spark prunes partitions before it lists files. -#}

{% macro _partition_casts(partition_columns) %}
    {#- The partition columns read as strings, the form every partition value list holds. -#}
    {% set casts = [] %}
    {% for column in partition_columns %}
        {% do casts.append('cast(' ~ joinery._quote_identifier(column) ~ ' as string)') %}
    {% endfor %}
    {{ return(casts) }}
{% endmacro %}


{% macro _partition_rollup_sql(sql, partition_columns, aggregates) %}
    {#- The rows of `sql` grouped by partition: the partition values as strings
        (`joinery_partition_1`, ...) and `aggregates` (SQL expressions with their aliases); one row in
        all without partition columns. Grouped by the expressions, not their aliases: a column of
        `sql` named like an alias would win over it. -#}
    {% set casts = joinery._partition_casts(partition_columns) %}
    {% set selected = [] %}
    {% for cast_sql in casts %}
        {% do selected.append(cast_sql ~ ' as joinery_partition_' ~ loop.index) %}
    {% endfor %}
    {{ return('select ' ~ (selected + aggregates) | join(', ') ~ '\nfrom (\n' ~ sql ~ '\n)'
        ~ ('\ngroup by ' ~ casts | join(', ') if casts else '')) }}
{% endmacro %}


{% macro _partition_list_sql(partition_columns) %}
    {#- Over _partition_rollup_sql's rows: the partitions as a JSON array of value lists (values as
        strings, NULL as null), sorted. -#}
    {% set names = [] %}
    {% for column in partition_columns %}
        {% do names.append('joinery_partition_' ~ loop.index) %}
    {% endfor %}
    {{ return('to_json(array_sort(collect_list(array(' ~ names | join(', ') ~ '))))') }}
{% endmacro %}


{% macro _parse_partition_values(text) %}
    {#- The partitions _partition_list_sql wrote (a JSON array of value lists; NULL text: none). -#}
    {{ return(fromjson(text or '[]')) }}
{% endmacro %}


{% macro _partition_predicate(columns, partitions, alias=none) %}
    {#- ((`k` = cast('1' as int) and `d` = cast('x' as date)) or ...): the rows of the given
        partitions, each a list of values read as strings in the order of `columns` (name and type
        of each partition column); `false` for none. Literal, so Spark prunes partitions before it
        lists files. A partition with a NULL value is left out: `=` matches no row with it. -#}
    {% set terms = [] %}
    {% for values in partitions if none not in values %}
        {% set parts = [] %}
        {% for column in columns %}
            {% do parts.append((alias ~ '.' if alias else '') ~ joinery._quote_identifier(column.name)
                ~ ' = ' ~ joinery._typed_literal(values[loop.index0], column.type)) %}
        {% endfor %}
        {% do terms.append('(' ~ parts | join(' and ') ~ ')') %}
    {% endfor %}
    {{ return('(' ~ terms | join(' or ') ~ ')' if terms else 'false') }}
{% endmacro %}
