{#- Matching rows on their key columns: the one place every capability builds its join condition. -#}

{% macro _key_match(keys, left, right, right_keys=none, null_safe=true, equal_columns=[]) %}
    {#- `left`.k1 <=> `right`.k1 and ...: null-safe by default, so a NULL key part behaves like a
        value (matched, not duplicated). `right_keys`: the right side's columns, pairwise, when they
        are named otherwise (a foreign key). `null_safe=false`, or a column in `equal_columns`,
        compares with `=`: a NULL then matches nothing (a foreign key), and Spark can prune
        partitions on the key (a partition column never holds NULL in a joinery_upsert table). -#}
    {% set others = right_keys if right_keys is not none else keys %}
    {% set equal = equal_columns | map('lower') | list %}
    {% set terms = [] %}
    {% for key in keys %}
        {% set operator = ' <=> ' if null_safe and key | lower not in equal else ' = ' %}
        {% do terms.append(left ~ '.' ~ joinery._quote_identifier(key) ~ operator ~ right ~ '.'
            ~ joinery._quote_identifier(others[loop.index0])) %}
    {% endfor %}
    {{ return(terms | join(' and ')) }}
{% endmacro %}


{% macro _newer_version_sql(versions, newer, older) %}
    {#- True when the row in alias `newer` holds a strictly newer version than the one in `older`:
        `versions` compared in order, the first that differs deciding, NULL lowest; false on a tie. -#}
    {% set condition = namespace(sql='false') %}
    {% for column in versions | reverse %}
        {% set n = newer ~ '.' ~ joinery._quote_identifier(column) %}
        {% set o = older ~ '.' ~ joinery._quote_identifier(column) %}
        {% set condition.sql = '(coalesce(' ~ n ~ ' > ' ~ o ~ ', ' ~ n ~ ' is not null and ' ~ o ~ ' is null) or ('
            ~ n ~ ' <=> ' ~ o ~ ' and ' ~ condition.sql ~ '))' %}
    {% endfor %}
    {{ return(condition.sql) }}
{% endmacro %}
