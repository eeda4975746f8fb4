{#- joinery_upsert on parquet, orc and Hive SerDe tables: a new version in a fresh directory, checked,
    then committed by metastore calls (upsert_commit.sql). -#}

{% macro upsert_by_rewrite(target, existing, sql, settings) %}
    {% set target_sql = target.render() %}
    {% set run_id = run_started_at.strftime('%Y%m%d%H%M%S%f') ~ '_' ~ invocation_id[:8] %}

    {#- Is the existing table one of ours (versioned layout)? Finish what a killed run left first. -#}
    {% set properties = joinery.upsert_table_properties(target_sql) if existing is not none else {} %}
    {% set managed = 'joinery.root' in properties %}
    {% if managed and joinery.upsert_recover(target, properties) %}
        {% set properties = joinery.upsert_table_properties(target_sql) %}
    {% endif %}
    {% set full_build = existing is none or not managed or should_full_refresh() %}
    {#- Rows are matched on the key the table was built with: matched on another key, one change
        could replace several rows, or two changes one row (the row count check cannot tell). -#}
    {% set unique_key_text = tojson(settings.unique_key | map('lower') | list) %}
    {% if not full_build and properties.get('joinery.unique_key', unique_key_text) != unique_key_text %}
        {{ joinery.raise_argument_error(settings.where, 'unique_key', settings.unique_key, 'the table was built with '
            ~ 'unique_key ' ~ properties['joinery.unique_key'] ~ ', and matching its rows on another key can '
            ~ 'merge or drop rows: change unique_key with --full-refresh') }}
    {% endif %}
    {#- Versions live under the root the table was built with (`joinery.root`); joinery does not move
        a table's files, so a changed location_root (stored as configured) is an error, not ignored. -#}
    {% set location_root_text = config.get('location_root') or '' %}
    {% if managed and properties.get('joinery.location_root', location_root_text) != location_root_text %}
        {{ joinery.raise_argument_error(settings.where, 'location_root', location_root_text, 'the table was built '
            ~ 'with location_root ' ~ tojson(properties['joinery.location_root']) ~ ' (its versions are under '
            ~ properties['joinery.root'] ~ '), and joinery does not move a table: set location_root back, or drop '
            ~ target_sql ~ ' and run again to build it at the new root (the old root keeps its files)') }}
    {% endif %}

    {#- A Hive SerDe table reads its files through the SerDe and formats its definition names, and a
        commit only moves its location: a version written with other options (another fileFormat)
        would be unreadable. The options are stored as configured (`joinery.options`); a table built
        before they were has none to compare. -#}
    {% set options_text = joinery.upsert_options_text(settings) %}
    {% set options_changed = managed and properties.get('joinery.options', options_text) != options_text %}
    {% if options_changed and not full_build %}
        {{ joinery.raise_argument_error(settings.where, 'options', settings.options, 'the table was built with '
            ~ 'options ' ~ properties['joinery.options'] ~ ', and its definition could not read files written '
            ~ 'with others: change options with --full-refresh') }}
    {% endif %}

    {% set changes = joinery.upsert_stage_changes(sql) %}
    {% set annotation = joinery.upsert_model_watermark(sql) %}
    {% set newest_of = joinery.upsert_watermark_to_derive(annotation) %}
    {% set change_info = joinery.upsert_validate_changes(changes, settings, with_partitions=not full_build,
        newest_of=newest_of) %}
    {% set partitions = change_info.partition_by %}

    {% set watermark_text = annotation if newest_of is none
        else joinery.upsert_derived_watermark(newest_of, change_info.newest) %}
    {% if not full_build and change_info.rows == 0 %}
        {#- Nothing changed: no rewrite, no commit; the table keeps its files and location. -#}
        {% do joinery.upsert_store_unchanged_watermark(target_sql, properties, watermark_text) %}
        {% call statement('main') %}select 'joinery_upsert: no changed rows' as status{% endcall %}
        {{ log('joinery_upsert ' ~ target ~ ': no changed rows, table left unchanged', info=true) }}
        {% do joinery.upsert_drop_changes(changes) %}
        {{ return(none) }}
    {% endif %}

    {#- Where versions live. -#}
    {% if managed %}
        {#- Stored qualified; a root without a scheme is one stored before joinery qualified it. -#}
        {% set root = joinery.upsert_qualified_location(target, properties['joinery.root'], unless_qualified=true) %}
    {% elif config.get('location_root') %}
        {% set root = joinery.upsert_qualified_location(target, config.get('location_root') ~ '/' ~ target.identifier) %}
    {% else %}
        {#- Not the folder of a managed table of that name (`<alias>`): dbt-spark's `table`, if the
            model is switched back to it, drops the table and creates its own there, which fails
            with LOCATION_ALREADY_EXISTS on a folder holding joinery's versions. -#}
        {% set root = joinery.upsert_schema_location(target.schema) ~ '/' ~ target.identifier ~ '__joinery' %}
    {% endif %}
    {% set target_info = joinery.upsert_describe(target_sql) if existing is not none else none %}
    {% if existing is not none and not managed and target_info['location'].startswith(root) %}
        {#- A table joinery did not create (e.g. a former `table` model) that lives at the default
            root: dropping it (if managed) deletes that directory, so our versions go beside it. -#}
        {% set root = root ~ '__joinery' %}
    {% endif %}
    {% set version_dir = joinery.upsert_version_directory(root, run_id) %}

    {#- The columns of the new version, and the SELECT that produces it. -#}
    {% set plan = joinery.upsert_plan(target_sql, target_info if managed else none, full_build, changes,
        change_info, settings, options_changed) %}

    {#- Write the new version into its own directory through a staging table. -#}
    {% set stage_sql = joinery.upsert_work_table(target, 'stage') %}
    {% if managed %}
        {% do joinery.upsert_set_pending(target_sql, {'run': run_id, 'state': 'writing', 'dir': version_dir}) %}
    {% endif %}
    {% do run_query('create table ' ~ stage_sql ~ ' (\n    ' ~ joinery.upsert_column_ddl(plan.columns) ~ '\n)\n'
        ~ joinery.upsert_storage_clause(settings, staging=true) ~ '\nlocation ' ~ joinery.sql_string(version_dir)) %}
    {% if partitions and settings.file_format == 'hive' %}
        {% do run_query('set hive.exec.dynamic.partition.mode=nonstrict') %}
    {% endif %}
    {#- One INSERT per SELECT: Spark 4 does not reuse a cached view whose query uses a CTE twice
        (compact's, fk_join's) when one statement names the view twice, so a single
        `carried union all changed` insert recomputed the changes, unpruned. -#}
    {% for select_sql in plan.selects[:-1] %}
        {% do run_query('insert into ' ~ stage_sql ~ '\n' ~ select_sql) %}
    {% endfor %}
    {% call statement('main') %}
        insert into {{ stage_sql }}
        {{ plan.selects[-1] }}
    {% endcall %}

    {#- Check the written version before committing it: its row count must be what the changes
        imply (a partial or doubled write fails here and the live table is never touched). -#}
    {#- Specs named as the new version's columns (partition columns last), as the table's are: a
        model that spells a partition column differently from the table must still match its
        partitions. -#}
    {% set stage_partitions = plan.partition_columns | map(attribute='name') | list %}
    {% set facts = joinery.upsert_version_facts(stage_sql, stage_partitions if partitions else [], plan,
        change_info, full_build) %}
    {% set written = facts.written %}
    {% set produced = joinery.upsert_written_partition_locations(stage_sql, version_dir, stage_partitions,
        facts.written_partitions, lowercase_names=settings.file_format == 'hive') if partitions else {} %}
    {% do run_query('drop table ' ~ stage_sql) %}
    {% if written != facts.expected_rows %}
        {% do joinery.upsert_drop_changes(changes) %}
        {{ exceptions.raise_compiler_error('joinery_upsert ' ~ target ~ ': the new version in ' ~ version_dir
            ~ ' has '
            ~ written ~ ' rows where ' ~ facts.expected_rows ~ ' were expected; the table was not changed') }}
    {% endif %}

    {#- Commit. -#}
    {% set journal = {'run': run_id, 'state': 'committing', 'location': none, 'add_columns': plan.add_columns,
        'unique_key': unique_key_text, 'location_root': location_root_text,
        'watermark': watermark_text,
        'set': [], 'add': [], 'drop': [], 'keep': [],
        'delete': fromjson(joinery.upsert_read_chunked_property(properties, 'joinery.garbage') or '[]')
            if managed else []} %}
    {% set recreate = existing is not none and (not managed or plan.recreate) %}
    {% if partitions %}
        {% for spec, location in produced | dictsort %}
            {% if spec in facts.existing_partitions and not recreate %}
                {% do journal['set'].append([spec, location]) %}
            {% else %}
                {% do journal['add'].append([spec, location]) %}
            {% endif %}
        {% endfor %}
        {% for spec in facts.existing_partitions if spec not in produced and not recreate %}
            {% do journal['drop'].append(spec) %}
        {% endfor %}
    {% else %}
        {% do journal.update({'location': version_dir}) %}
    {% endif %}
    {#- What the commit supersedes, by the table's partitioning as it was: a full refresh that
        partitions an unpartitioned table, or the reverse, supersedes the other layout's files. -#}
    {% if managed and plan.target_partition_columns and full_build %}
        {#- A full build supersedes every partition, so whole version directories: no metastore
            call per partition to find each one's location (4-6 s for the 100 of the incremental
            compaction benchmark), and their deletion by the next commit goes in bulk. -#}
        {% for name in facts.existing_versions if root ~ '/' ~ name != version_dir %}
            {% do journal['keep'].append(root ~ '/' ~ name) %}
        {% endfor %}
    {% elif managed and plan.target_partition_columns %}
        {% for spec in facts.existing_partitions %}
            {% do journal['keep'].append(joinery.upsert_partition_location(target_sql, spec)) %}
        {% endfor %}
    {% elif managed %}
        {% do journal['keep'].append(target_info['location']) %}
    {% endif %}
    {#- Only our own version directories are ever deleted later. -#}
    {% set keep = [] %}
    {% for path in journal['keep'] if joinery.upsert_is_version_directory(root, path) %}
        {% do keep.append(path) %}
    {% endfor %}
    {% do journal.update({'keep': keep}) %}

    {% if managed %}
        {% do joinery.upsert_check_no_overlap(target, root, properties, run_id, version_dir, changes) %}
    {% endif %}
    {% if existing is none or recreate %}
        {#- A new table definition. For a table we did not create, or a full refresh that changes the
            schema beyond added columns, the old definition is dropped only now that the new data is
            written (external tables keep their files; a former managed table's files go with it). -#}
        {% if recreate %}
            {% do adapter.drop_relation(existing) %}
        {% endif %}
        {% set pending = journal if partitions else none %}
        {% do run_query('create table ' ~ target_sql ~ ' (\n    ' ~ joinery.upsert_column_ddl(plan.columns) ~ '\n)\n'
            ~ joinery.upsert_storage_clause(settings) ~ '\nlocation '
                ~ joinery.sql_string(root if partitions else version_dir)
            ~ '\ntblproperties (' ~ joinery.sql_string('joinery.root') ~ ' = '
                ~ joinery.sql_string(root) ~ ', '
            ~ joinery.sql_string('joinery.unique_key') ~ ' = ' ~ joinery.sql_string(unique_key_text) ~ ', '
            ~ joinery.sql_string('joinery.location_root') ~ ' = ' ~ joinery.sql_string(location_root_text) ~ ', '
            ~ joinery.sql_string('joinery.options') ~ ' = ' ~ joinery.sql_string(options_text) ~ ', '
            ~ joinery.upsert_chunked_property('joinery.pending', tojson(pending) if pending else '') ~ ', '
            ~ joinery.upsert_chunked_property('joinery.garbage', tojson(journal['keep'] + journal['delete'])) ~ ', '
            ~ joinery.sql_string('joinery.watermark') ~ ' = ' ~ joinery.sql_string(journal['watermark'])
                ~ ', '
            ~ joinery.sql_string('joinery.version') ~ ' = ' ~ joinery.sql_string(run_id) ~ ')') %}
        {% if partitions %}
            {% do journal.update({'location': none, 'add_columns': [],
                'keep': journal['keep'] + journal['delete'], 'delete': []}) %}
            {% do joinery.upsert_apply_commit(target, root, journal) %}
        {% endif %}
    {% else %}
        {% do joinery.upsert_set_pending(target_sql, journal) %}
        {% do joinery.upsert_apply_commit(target, root, journal) %}
    {% endif %}
    {% do joinery.upsert_drop_changes(changes) %}
    {{ log('joinery_upsert ' ~ target ~ ': ' ~ facts.summary ~ '; version ' ~ run_id ~ ' has ' ~ written ~ ' rows'
        ~ ((' in ' ~ produced | length ~ ' rewritten partitions, ' ~ journal['drop'] | length
            ~ ' dropped') if partitions else ''), info=true) }}
{% endmacro %}


{% macro upsert_column_select(columns, available, alias) %}
    {#- Select `columns` (name, type) from a relation with columns `available`: a missing column is
        NULL of the column's type. -#}
    {% set parts = [] %}
    {% for column in columns %}
        {% set found = joinery.find_column(available, column.name) %}
        {% if found is none %}
            {% do parts.append('cast(null as ' ~ column.type ~ ') as ' ~ joinery.quote_identifier(column.name)) %}
        {% else %}
            {% do parts.append(alias ~ '.' ~ joinery.quote_identifier(found) ~ ' as '
                ~ joinery.quote_identifier(column.name)) %}
        {% endif %}
    {% endfor %}
    {{ return(parts | join(',\n        ')) }}
{% endmacro %}


{% macro upsert_live_condition(change_info, alias) %}
    {#- True for changed rows that upsert (not deletes); a NULL marker counts as not deleted. -#}
    {% if change_info.deleted is none %}
        {{ return('true') }}
    {% endif %}
    {{ return('not coalesce(' ~ alias ~ '.' ~ joinery.quote_identifier(change_info.deleted) ~ ', false)') }}
{% endmacro %}


{% macro upsert_key_match(keys, left, right) %}
    {#- Null-safe key equality, so a NULL key part behaves like a value (matched, not duplicated). -#}
    {% set terms = [] %}
    {% for key in keys %}
        {% do terms.append(left ~ '.' ~ joinery.quote_identifier(key) ~ ' <=> ' ~ right ~ '.'
            ~ joinery.quote_identifier(key)) %}
    {% endfor %}
    {{ return(terms | join(' and ')) }}
{% endmacro %}


{% macro upsert_types_compatible(target_type, change_type) %}
    {#- A changed column may have the target's type, be untyped NULL, or a type whose every value the
        target's type holds exactly: a narrower integer, or an int or float into a double. -#}
    {% set integers = ['tinyint', 'smallint', 'int', 'bigint'] %}
    {% set t = target_type | lower %}
    {% set c = change_type | lower %}
    {% if t == c or c == 'void' %}
        {{ return(true) }}
    {% endif %}
    {% if c in integers and t in integers %}
        {{ return(integers.index(c) <= integers.index(t)) }}
    {% endif %}
    {#- Values a double holds exactly: not a bigint's above 2^53, and a float is not a bigint. -#}
    {{ return(t == 'double' and c in ['tinyint', 'smallint', 'int', 'float']) }}
{% endmacro %}


{% macro upsert_plan(target_sql, target_info, full_build, changes, change_info, settings, options_changed=false) %}
    {#- The new version: its columns, the SELECTs whose rows make it up, the SELECT of the table's
        figures to check it against once written (`target_facts`, none when there are none to read),
        and whether the table definition changes (`options_changed`: it does).
        `target_info` is none when there is no joinery table to build on. -#}
    {% set where = settings.where %}
    {% set partitions = change_info.partition_by %}
    {% set change_names = change_info.columns | map(attribute='name') | list %}
    {% set live = joinery.upsert_live_condition(change_info, 'changed') %}

    {#- Columns: the target's, then columns the model added; partition columns last. A namespace: a
        `set` inside a Jinja for loop does not outlive the loop. -#}
    {% set recreate = namespace(value=target_info is none or options_changed) %}
    {% set columns = [] %}
    {% set add_columns = [] %}
    {% if target_info is not none %}
        {% set target_names = target_info.columns | map(attribute='name') | list %}
        {% if target_info.partition_columns | map('lower') | list != partitions | map('lower') | list %}
            {% if not full_build %}
                {% do joinery.upsert_drop_changes(changes) %}
                {{ joinery.raise_argument_error(where, 'partition_by', settings.partition_by,
                    'the table is partitioned by ' ~ tojson(target_info.partition_columns)
                        ~ '; change partitioning with --full-refresh') }}
            {% endif %}
            {% set recreate.value = true %}
        {% endif %}
        {#- A version is written in the configured format, and a commit only moves the table's
            location: files of another format than the table's definition would be unreadable. -#}
        {% if target_info.provider is not none and target_info.provider != settings.file_format | lower %}
            {% if not full_build %}
                {% do joinery.upsert_drop_changes(changes) %}
                {{ joinery.raise_argument_error(where, 'file_format', settings.file_format,
                    'the table is stored as ' ~ target_info.provider ~ '; change file_format with --full-refresh') }}
            {% endif %}
            {% set recreate.value = true %}
        {% endif %}
        {% for column in target_info.columns %}
            {% set found = joinery.find_column(change_names, column.name) %}
            {% if found is none and full_build %}
                {% set recreate.value = true %}
            {% elif found is not none %}
                {% set change_type = (change_info.columns | selectattr('name', 'equalto', found) | first)['type'] %}
                {% if not joinery.upsert_types_compatible(column.type, change_type) %}
                    {% if not full_build %}
                        {% do joinery.upsert_drop_changes(changes) %}
                        {{ exceptions.raise_compiler_error(where ~ ': column ' ~ found ~ ' is ' ~ change_type
                            ~ ' in the model but '
                            ~ column.type ~ ' in ' ~ target_sql
                                ~ '; cast it in the model, or change the type with --full-refresh') }}
                    {% endif %}
                    {% set recreate.value = true %}
                {% endif %}
            {% endif %}
        {% endfor %}
    {% endif %}
    {% if target_info is not none and not full_build %}
        {#- Types are checked above; on_schema_change='fail' also needs the same columns. -#}
        {% do joinery.upsert_check_schema_unchanged(settings, changes, target_sql, target_names, change_names) %}
    {% endif %}
    {% if recreate.value %}
        {% set columns = change_info.columns %}
    {% else %}
        {% for column in target_info.columns if column.name | lower not in partitions | map('lower') | list %}
            {% do columns.append(column) %}
        {% endfor %}
        {% for column in change_info.columns
            if joinery.find_column(target_names, column.name) is none and column.name not in partitions %}
            {% do columns.append(column) %}
            {% do add_columns.append([column.name, column.type]) %}
        {% endfor %}
        {% for column in target_info.columns if column.name | lower in partitions | map('lower') | list %}
            {% do columns.append(column) %}
        {% endfor %}
    {% endif %}

    {#- Partition columns are the last ones, named and typed as the new version stores them. -#}
    {% set partition_columns = columns[columns | length - partitions | length:] %}
    {% set new_rows = 'select\n        ' ~ joinery.upsert_column_select(columns, change_names, 'changed')
        ~ '\n    from ' ~ changes ~ ' as changed\n    where ' ~ live %}
    {#- `target_facts`: a one-row SELECT of the table's figures the commit needs (rows in the touched
        partitions, changes that update and that delete a row, the table's partitions among the
        touched ones; upsert_version_facts reads it with the written version's). -#}
    {% set target_partition_columns = target_info.partition_columns if target_info is not none else [] %}
    {% if full_build %}
        {% set target_facts = none %}
        {#- The table's partitions, and the version directories holding them, which the new version
            supersedes as a whole (whatever its own partitioning). -#}
        {% if target_partition_columns %}
            {% set target_facts = 'select null, 0, 0, joinery_partitions, joinery_versions from (\n'
                ~ joinery.upsert_partitions_and_versions_sql(target_sql, target_partition_columns) ~ '\n)' %}
        {% endif %}
        {{ return({'columns': columns, 'partition_columns': partition_columns, 'selects': [new_rows],
            'target_facts': target_facts, 'target_partition_columns': target_partition_columns,
            'add_columns': add_columns, 'recreate': recreate.value}) }}
    {% endif %}

    {#- Incremental: rows of the touched partitions (all rows, unpartitioned) whose key did not
        change, then the changed rows that are not deletes. -#}
    {% set touched = 'true' %}
    {% if partitions %}
        {#- The changes' partitions came with their statistics (upsert_validate_changes), from the one
            pass over them: a scalar subquery naming the cached changes a second time made Spark
            compute them again when their query has a CTE used twice (compact's, fk_join's). -#}
        {% set touched_partitions = change_info.partition_values %}
        {% set key_names = change_info['keys'] | map('lower') | list %}
        {% if partitions | map('lower') | reject('in', key_names) | list %}
            {#- A partition column outside the key may change for a key (a customer who moves city):
                the partitions holding the changed keys now are rewritten too, or the key's old row
                would stay there beside its new one. One scan of the table's key and partition
                columns, only for such models. -#}
            {% set holding = run_query(joinery.upsert_rows_and_partitions_sql(
                'select current.* from ' ~ target_sql ~ ' as current left semi join ' ~ changes ~ ' as changed on '
                    ~ joinery.upsert_key_match(change_info['keys'], 'changed', 'current'),
                target_partition_columns)).rows[0][1] %}
            {% set touched_partitions = touched_partitions + (joinery.upsert_parse_partition_values(
                holding, target_partition_columns) | reject('in', touched_partitions) | list) %}
        {% endif %}
        {% set touched = joinery.upsert_partition_predicate(partition_columns, touched_partitions) %}
    {% endif %}
    {% set key_list = [] %}
    {% for key in change_info['keys'] %}
        {% do key_list.append('current.' ~ joinery.quote_identifier(joinery.find_column(target_names, key) or key)) %}
    {% endfor %}
    {#- The changes are joined as the build side (they are cached, so Spark knows their size): a
        left join from the changes had to build the table's keys instead, 1M of them for the
        benchmark's fk_join result (1.0 s against 0.2 s for the inner join). Keys are unique in the
        table, so each matched change is one row of the join. -#}
    {% set target_facts = 'select target.joinery_rows, matched.joinery_updated, matched.joinery_deleted,'
        ~ ' target.joinery_partitions, cast(null as string) as joinery_versions\nfrom (\n'
        ~ joinery.upsert_rows_and_partitions_sql('select * from ' ~ target_sql ~ ' where ' ~ touched,
            target_partition_columns if partitions else []) ~ '\n) as target\n'
        ~ 'cross join (\nselect count_if(' ~ live ~ ') as joinery_updated,\n'
        ~ '    count_if(not (' ~ live ~ ')) as joinery_deleted\n'
        ~ 'from (select ' ~ key_list | join(', ') ~ ' from ' ~ target_sql ~ ' as current where ' ~ touched
            ~ ') as current\n'
        ~ 'join ' ~ changes ~ ' as changed\n'
        ~ '    on ' ~ joinery.upsert_key_match(change_info['keys'], 'changed', 'current') ~ '\n) as matched' %}
    {% set carried = 'select\n        ' ~ joinery.upsert_column_select(columns, target_names, 'current')
        ~ '\n    from ' ~ target_sql ~ ' as current\n    where (' ~ touched
            ~ ')\n        and not exists (select 1 from ' ~ changes ~ ' as changed where '
        ~ joinery.upsert_key_match(change_info['keys'], 'changed', 'current') ~ ')' %}
    {{ return({'columns': columns, 'partition_columns': partition_columns, 'selects': [carried, new_rows],
        'target_facts': target_facts, 'target_partition_columns': target_partition_columns,
        'add_columns': add_columns, 'recreate': false}) }}
{% endmacro %}


{% macro upsert_version_facts(stage_sql, stage_partitions, plan, change_info, full_build) %}
    {#- The written version's row count and partitions, with the table's figures of the plan
        (`target_facts`) in the same statement: the rows the version must hold, the table's
        partitions it replaces (and on a full build the version directories holding them), and the
        run's summary. One statement instead of one before the write and one after it: the two
        parts run side by side, and a Thrift server or cluster sees one round trip fewer. It names
        the cached changes once: naming them twice in one statement makes Spark compute them again
        when their query uses a CTE twice (compact's, fk_join's). -#}
    {% set written_sql = joinery.upsert_rows_and_partitions_sql('select * from ' ~ stage_sql, stage_partitions) %}
    {% if plan.target_facts %}
        {% set row = run_query('select * from (' ~ written_sql ~ ') as written\ncross join (\n'
            ~ plan.target_facts ~ '\n) as current').rows[0] %}
    {% else %}
        {% set row = run_query(written_sql).rows[0] | list + [none, 0, 0, none, none] %}
    {% endif %}
    {% set existing_partitions = joinery.upsert_specs_of_values(plan.target_partition_columns,
        joinery.upsert_parse_partition_values(row[5], plan.target_partition_columns)) if row[5] is not none else [] %}
    {% if full_build %}
        {% set expected = change_info.live_rows %}
        {% set summary = 'full build of ' ~ change_info.live_rows ~ ' rows' %}
    {% else %}
        {% set updated = row[3] | int %}
        {% set deleted = row[4] | int %}
        {% set inserted = change_info.live_rows - updated %}
        {% set expected = (row[2] | int) + inserted - deleted %}
        {% set summary = inserted ~ ' inserted, ' ~ updated ~ ' updated, ' ~ deleted ~ ' deleted' %}
    {% endif %}
    {{ return({'written': row[0] | int,
        'written_partitions': joinery.upsert_parse_partition_values(row[1], stage_partitions) if stage_partitions else [],
        'expected_rows': expected, 'existing_partitions': existing_partitions,
        'existing_versions': fromjson(row[6]) if row[6] is not none else [], 'summary': summary}) }}
{% endmacro %}
