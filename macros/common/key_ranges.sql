{#- Key ranges: the few literal ranges a set of keys falls in. Delta and Iceberg skip a data file
    only on literal predicates over the table's own columns (a MERGE's ON clause, a scan's WHERE),
    and a table written in key order holds each range in few files, so a change clustered in a few
    key slices (new keys, recent rows) reads and rewrites only those files. Computed in the same
    statement as the figures that need a pass over the rows anyway. -#}

{% macro _key_ranges_sql(rows_sql, column, max_ranges) %}
    {#- A scalar subquery: the values of `column` in `rows_sql` as a JSON array of at most `max_ranges`
        [low, high] pairs of text (NULLs left out; `[]` for no rows), split at the widest gaps
        between consecutive distinct values (_key_distance_sql). Any column type: the SQL does not
        depend on it, so the figures it joins need no statement first to learn it. -#}
    {% set value = 'joinery_key.' ~ joinery._quote_identifier(column) %}
    {% set distance = joinery._key_distance_sql('key_value', 'lag(key_value) over (order by key_value)') %}
    {% set ranges_sql %}
(
    with joinery_values as (
        select distinct {{ value }} as key_value from ({{ rows_sql }}) as joinery_key where {{ value }} is not null
    )
    select coalesce(to_json(transform(array_sort(collect_list(named_struct('low', low, 'high', high))),
        r -> array(cast(r.low as string), cast(r.high as string)))), '[]')
    from (
        select min(key_value) as low, max(key_value) as high
        from (
            select key_value, sum(if(joinery_cut, 1, 0)) over (order by key_value) as joinery_range
            from (
                select key_value, coalesce(row_number() over (order by joinery_gap desc nulls last) < {{ max_ranges }}
                    and joinery_gap > 0, false) as joinery_cut
                from (select key_value, {{ distance }} as joinery_gap from joinery_values) as gaps
            ) as cuts
        ) as grouped
        group by joinery_range
    ) as ranges
)
    {%- endset %}
    {{ return(ranges_sql) }}
{% endmacro %}


{% macro _key_distance_sql(value, previous) %}
    {#- How far apart two consecutive values are: as numbers when their text is one (integers,
        decimals, doubles), else as timestamps when it is one (dates, timestamps), else NULL (strings
        and other types: no gap, one range). Through text, so that the SQL is the same for every
        type; the ranges' bounds are the values themselves. -#}
    {% set forms = [] %}
    {% set numbers = 'try_cast(cast({} as string) as double)' %}
    {% set times = 'unix_micros(try_cast(cast({} as string) as timestamp))' %}
    {% for form in [numbers, times] %}
        {% do forms.append(form.replace('{}', value) ~ ' - ' ~ form.replace('{}', previous)) %}
    {% endfor %}
    {{ return('coalesce(' ~ forms | join(', ') ~ ')') }}
{% endmacro %}


{% macro _key_range_predicate(column, type, ranges, alias) %}
    {#- `(alias.column between <low> and <high> or ...)` for the ranges _key_ranges_sql computed (as
        parsed JSON): literal, so Delta and Iceberg skip the files outside them; `false` for none. -#}
    {% set terms = [] %}
    {% set quoted = alias ~ '.' ~ joinery._quote_identifier(column) %}
    {% for low, high in ranges %}
        {% do terms.append(quoted ~ ' between ' ~ joinery._typed_literal(low, type) ~ ' and '
            ~ joinery._typed_literal(high, type)) %}
    {% endfor %}
    {{ return('(' ~ terms | join(' or ') ~ ')' if terms else 'false') }}
{% endmacro %}
