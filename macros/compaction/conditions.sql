{#- The SQL conditions and pieces that every compaction query (full, incremental, diff) shares:
    which version of a key wins, when two rows have the same key or the same values, the broadcast
    hint, and the delete flag. -#}

{% macro _compaction_version_columns(settings) %}
    {#- The version columns, updated_at then loaded_at, that are set: the columns that order a key's
        versions, which tombstones keep and that a delete's version is compared on. -#}
    {{ return([settings.updated_at, settings.loaded_at] | reject('none') | list) }}
{% endmacro %}


{% macro _compaction_version_wins(settings, newer, older, older_first=false) %}
    {#- True when the version in alias `newer` beats the one in `older` (same key): greater
        updated_at, then greater loaded_at (NULLs lowest); a full tie goes to `newer`, the later source.
        `older_first` writes each comparison with `older` on the left, the same condition, for a join
        whose earlier table is `older`. -#}
    {% set condition = namespace(sql='true') %}
    {% for column in [settings.loaded_at, settings.updated_at] if column is not none %}
        {% set n = newer ~ '.' ~ joinery._quote_identifier(column) %}
        {% set o = older ~ '.' ~ joinery._quote_identifier(column) %}
        {% if older_first %}
            {% set condition.sql = '(coalesce(' ~ o ~ ' < ' ~ n ~ ', false) or (' ~ o ~ ' is null and ' ~ n
                ~ ' is not null) or (' ~ o ~ ' <=> ' ~ n ~ ' and ' ~ condition.sql ~ '))' %}
        {% else %}
            {% set condition.sql = '(coalesce(' ~ n ~ ' > ' ~ o ~ ', false) or (' ~ n ~ ' is not null and ' ~ o
                ~ ' is null) or (' ~ n ~ ' <=> ' ~ o ~ ' and ' ~ condition.sql ~ '))' %}
        {% endif %}
    {% endfor %}
    {{ return(condition.sql) }}
{% endmacro %}


{% macro _compaction_key_match(settings, left, right) %}
    {#- Null-safe, except on the partition columns of an incremental run: a joinery_upsert table
        never holds a NULL partition value, and `=` lets Spark use the key for partition pruning
        (dynamic pruning, when it can reuse the broadcast; _compaction_new_rows adds the
        literal predicate that prunes in every case). -#}
    {{ return(joinery._key_match(settings.key, left, right, equal_columns=settings.get('equal_columns', []))) }}
{% endmacro %}


{% macro _compaction_hint(settings, alias) %}
    {#- A broadcast hint for `alias`, unless broadcast=false. -#}
    {{ return('/*+ broadcast(' ~ alias ~ ') */' if settings.broadcast else '') }}
{% endmacro %}


{% macro _compaction_deleted_sql(settings) %}
    {#- The deleted expression as a boolean that is never NULL (false without one). -#}
    {{ return('coalesce((' ~ settings.deleted ~ '), false)' if settings.deleted is not none else 'false') }}
{% endmacro %}


{% macro _compaction_same_values(plan, left, right) %}
    {#- One condition per plan column that aliases `left` and `right` hold the same value (NULLs
        equal, maps and variants compared by value: _same_value_sql): the row equality that a diff
        and an incremental run join with. -#}
    {% set same = [] %}
    {% for entry in plan %}
        {% do same.append(joinery._same_value_sql(left ~ '.' ~ joinery._quote_identifier(entry.name),
            right ~ '.' ~ joinery._quote_identifier(entry.name), entry.type)) %}
    {% endfor %}
    {{ return(same) }}
{% endmacro %}
