{#- One row per combination of `columns` (a composite key): fails with each combination that occurs
    more than once and how often. NULLs count as a value, as they do in the compaction's key match. -#}
{% test unique_combination(model, columns) %}
    {% set key_columns = joinery._as_list(columns, 'columns', 'unique_combination') %}
    {% for column in key_columns %}
        {% do joinery._validate_identifier(column, 'columns', 'unique_combination') %}
    {% endfor %}

    select
        {{ joinery._quoted_column_list(key_columns) }},
        count(*) as n_rows
    from {{ model }}
    group by {{ joinery._quoted_column_list(key_columns) }}
    having count(*) > 1
{% endtest %}
