{#- The new version of a rewritten table: its columns, the SELECTs whose rows make it up, and the
    SELECT of the table's figures it is checked against once written (verify.sql). -#}

{% macro _upsert_plan(target_sql, target_info, full_build, changes, change_info, settings, options_changed=false) %}
    {#- {'columns' (partition columns last), 'partition_columns', 'selects' (one INSERT each),
        'target_facts' (none when there are none to read), 'target_partition_columns', 'add_columns',
        'recreate' (the table definition changes)}. `target_info` is none when there is no joinery
        table to build on; `options_changed`: a Hive SerDe table's options differ from its own. -#}
    {% set recreate = target_info is none or options_changed
        or joinery._upsert_plan_recreate(target_sql, target_info, full_build, changes, change_info, settings) %}
    {% set change_names = change_info.columns | map(attribute='name') | list %}
    {% if target_info is not none and not full_build %}
        {#- Types are checked by _upsert_plan_recreate; on_schema_change='fail' also needs the same columns. -#}
        {% do joinery._upsert_check_schema_unchanged(settings, changes, target_sql,
            target_info.columns | map(attribute='name') | list, change_names) %}
    {% endif %}
    {% set layout = joinery._upsert_plan_columns(target_info, change_info, recreate) %}
    {#- Partition columns are the last ones, named and typed as the new version stores them. -#}
    {% set partition_columns = layout.columns[layout.columns | length - change_info.partition_by | length:] %}
    {% set new_rows = 'select\n        ' ~ joinery._upsert_column_select(layout.columns, change_names, 'changed')
        ~ '\n    from ' ~ changes ~ ' as changed\n    where ' ~ joinery._upsert_live_condition(change_info, 'changed') %}
    {% set plan = {'columns': layout.columns, 'partition_columns': partition_columns, 'selects': [new_rows],
        'target_facts': none, 'target_partition_columns': target_info.partition_columns if target_info else [],
        'add_columns': layout.add_columns, 'recreate': recreate} %}
    {% if full_build and plan.target_partition_columns %}
        {#- The table's partitions, and the version directories holding them, which the new version
            supersedes as a whole (whatever its own partitioning). -#}
        {% do plan.update({'target_facts': 'select null, 0, 0, joinery_partitions, joinery_versions from (\n'
            ~ joinery._upsert_partitions_and_versions_sql(target_sql, plan.target_partition_columns) ~ '\n)'}) %}
    {% elif not full_build %}
        {% do plan.update(joinery._upsert_plan_incremental(target_sql, target_info, changes, change_info, plan)) %}
    {% endif %}
    {{ return(plan) }}
{% endmacro %}


{% macro _upsert_plan_recreate(target_sql, target_info, full_build, changes, change_info, settings) %}
    {#- Whether the table's definition must change: another partitioning, another format, a column
        the model no longer selects, or a type the table cannot hold. Each is allowed only on a full
        build: an incremental run fails naming what to change. -#}
    {% set recreate = namespace(value=false) %}
    {% set partitions = change_info.partition_by %}
    {% if target_info.partition_columns | map('lower') | list != partitions | map('lower') | list %}
        {% if not full_build %}
            {{ joinery._upsert_argument_error('partition_by', settings.partition_by, 'the table is partitioned by '
                ~ tojson(target_info.partition_columns) ~ '; change partitioning with --full-refresh', changes) }}
        {% endif %}
        {% set recreate.value = true %}
    {% endif %}
    {#- A version is written in the configured format, and a commit only moves the table's location:
        files of another format than the table's definition would be unreadable. -#}
    {% if target_info.provider is not none and target_info.provider != settings.file_format | lower %}
        {% if not full_build %}
            {{ joinery._upsert_argument_error('file_format', settings.file_format, 'the table is stored as '
                ~ target_info.provider ~ '; change file_format with --full-refresh', changes) }}
        {% endif %}
        {% set recreate.value = true %}
    {% endif %}
    {% set change_names = change_info.columns | map(attribute='name') | list %}
    {% for column in target_info.columns %}
        {% set found = joinery._find_column(change_names, column.name) %}
        {% set change_type = (change_info.columns | selectattr('name', 'equalto', found) | first)['type']
            if found is not none else none %}
        {% if found is none and full_build %}
            {% set recreate.value = true %}
        {% elif found is not none and not joinery._upsert_types_compatible(column.type, change_type) %}
            {% if not full_build %}
                {{ joinery._upsert_fail('column ' ~ found ~ ' is ' ~ change_type ~ ' in the model but ' ~ column.type
                    ~ ' in ' ~ target_sql ~ '; cast it in the model, or change the type with --full-refresh',
                    changes) }}
            {% endif %}
            {% set recreate.value = true %}
        {% endif %}
    {% endfor %}
    {{ return(recreate.value) }}
{% endmacro %}


{% macro _upsert_plan_columns(target_info, change_info, recreate) %}
    {#- {'columns', 'add_columns'}: a new definition takes the changes' columns; otherwise the
        table's, then the columns the model added (to add to the table); partition columns last. -#}
    {% if recreate %}
        {{ return({'columns': change_info.columns, 'add_columns': []}) }}
    {% endif %}
    {% set partitions = change_info.partition_by | map('lower') | list %}
    {% set target_names = target_info.columns | map(attribute='name') | list %}
    {% set columns = [] %}
    {% set add_columns = [] %}
    {% for column in target_info.columns if column.name | lower not in partitions %}
        {% do columns.append(column) %}
    {% endfor %}
    {% for column in change_info.columns
        if joinery._find_column(target_names, column.name) is none and column.name | lower not in partitions %}
        {% do columns.append(column) %}
        {% do add_columns.append([column.name, column.type]) %}
    {% endfor %}
    {% for column in target_info.columns if column.name | lower in partitions %}
        {% do columns.append(column) %}
    {% endfor %}
    {{ return({'columns': columns, 'add_columns': add_columns}) }}
{% endmacro %}


{% macro _upsert_column_select(columns, available, alias) %}
    {#- Select `columns` (name, type) from a relation with columns `available`: a missing column is
        NULL of the column's type. -#}
    {% set parts = [] %}
    {% for column in columns %}
        {% set found = joinery._find_column(available, column.name) %}
        {% if found is none %}
            {% do parts.append('cast(null as ' ~ column.type ~ ') as ' ~ joinery._quote_identifier(column.name)) %}
        {% else %}
            {% do parts.append(joinery._select_item(alias ~ '.' ~ joinery._quote_identifier(found), column.name)) %}
        {% endif %}
    {% endfor %}
    {{ return(parts | join(',\n        ')) }}
{% endmacro %}


{% macro _upsert_touched_partitions(target_sql, changes, change_info, target_partition_columns) %}
    {#- The partitions an incremental run rewrites: those the changes fall in (read with their
        statistics, _upsert_validate_changes), and, when a partition column is outside the key (a
        customer who moves city), those holding the changed keys now, or the key's old row would
        stay there beside its new one: one scan of the table's key and partition columns. -#}
    {% set touched = change_info.partition_values %}
    {% set key_names = change_info['keys'] | map('lower') | list %}
    {% if change_info.partition_by | map('lower') | reject('in', key_names) | list %}
        {% set holding = run_query(joinery._upsert_rows_and_partitions_sql(
            'select current.* from ' ~ target_sql ~ ' as current left semi join ' ~ changes ~ ' as changed on '
                ~ joinery._key_match(change_info['keys'], 'changed', 'current'),
            target_partition_columns)).rows[0][1] %}
        {% set touched = touched
            + (joinery._upsert_partition_values(holding, changes) | reject('in', touched) | list) %}
    {% endif %}
    {{ return(touched) }}
{% endmacro %}


{% macro _upsert_plan_incremental(target_sql, target_info, changes, change_info, plan) %}
    {#- The incremental parts of the plan: the rows of the touched partitions (all rows,
        unpartitioned) whose key did not change come first (`carried`), and `target_facts`. The
        changes are joined as the build side (they are cached, so Spark knows their size); keys are
        unique in the table, so each matched change is one row of the join. -#}
    {% set partitioned = change_info.partition_by | length > 0 %}
    {% set touched = joinery._partition_predicate(plan.partition_columns, joinery._upsert_touched_partitions(
        target_sql, changes, change_info, plan.target_partition_columns)) if partitioned else 'true' %}
    {% set target_names = target_info.columns | map(attribute='name') | list %}
    {% set key_list = [] %}
    {% for key in change_info['keys'] %}
        {% do key_list.append('current.' ~ joinery._quote_identifier(joinery._find_column(target_names, key) or key)) %}
    {% endfor %}
    {% set live = joinery._upsert_live_condition(change_info, 'changed') %}
    {% set key_match = joinery._key_match(change_info['keys'], 'changed', 'current') %}
    {% set target_facts = 'select target.joinery_rows, matched.joinery_updated, matched.joinery_deleted,'
        ~ ' target.joinery_partitions, cast(null as string) as joinery_versions\nfrom (\n'
        ~ joinery._upsert_rows_and_partitions_sql('select * from ' ~ target_sql ~ ' where ' ~ touched,
            plan.target_partition_columns if partitioned else []) ~ '\n) as target\n'
        ~ 'cross join (\nselect count_if(' ~ live ~ ') as joinery_updated,\n'
        ~ '    count_if(not (' ~ live ~ ')) as joinery_deleted\n'
        ~ 'from (select ' ~ key_list | join(', ') ~ ' from ' ~ target_sql ~ ' as current where ' ~ touched
            ~ ') as current\n'
        ~ 'join ' ~ changes ~ ' as changed\n    on ' ~ key_match ~ '\n) as matched' %}
    {% set carried = 'select\n        ' ~ joinery._upsert_column_select(plan.columns, target_names, 'current')
        ~ '\n    from ' ~ target_sql ~ ' as current\n    where (' ~ touched
        ~ ')\n        and not exists (select 1 from ' ~ changes ~ ' as changed where ' ~ key_match ~ ')' %}
    {{ return({'selects': [carried] + plan.selects, 'target_facts': target_facts}) }}
{% endmacro %}
