{#- The commit protocol of joinery_upsert on parquet and Hive tables (docs/upsert.md says why each
    step is crash safe). A commit is described by a journal, stored in the target's table property
    `joinery.pending` before any of it is applied, so a run killed halfway through a multi-step commit
    is finished by the next run (`upsert_recover`) instead of leaving it half applied:
      {"run": id, "state": "committing", "location": new table location or none,
       "add_columns": [[name, type]], "set": [[spec, location]], "add": [[spec, location]],
       "drop": [spec], "delete": [directories to delete now], "keep": [superseded directories kept
       as the previous version, deleted by the next commit], "watermark": the model's watermark
       annotation, stored as `joinery.watermark` with the commit ('' for none)}
    A journal in state "writing" ({"state": "writing", "dir": ...}) marks a version directory being
    written; a run killed then leaves a directory that the next run deletes. -#}

{% macro upsert_check_no_overlap(relation, root, properties, run_id, version_dir, changes) %}
    {#- Just before a commit: fail, committing nothing, if another run of the model (an overlapping
        invocation, e.g. a slow run and the next scheduled one) committed since this run read the
        table, or took over the pending journal. This run's version was computed from the table as
        it read it; committing it would undo the other run's changes. One `show tblproperties`. The
        other run may still be between this check and its own commit, so this narrows the window
        rather than closing it: overlapping runs remain unsupported. If the journal is still this
        run's, its directory is deleted and the journal cleared, as recovery would. -#}
    {% set now = joinery.upsert_table_properties(relation.render()) %}
    {% set pending = joinery.upsert_read_chunked_property(now, 'joinery.pending') %}
    {% set ours = pending != '' and fromjson(pending).get('run') == run_id %}
    {% if ours and now.get('joinery.version') == properties.get('joinery.version') %}
        {{ return(none) }}
    {% endif %}
    {% if ours %}
        {% do joinery.upsert_delete_directories(relation, root, [version_dir]) %}
        {% do joinery.upsert_set_pending(relation.render(), none) %}
    {% endif %}
    {% do joinery.upsert_drop_changes(changes) %}
    {{ exceptions.raise_compiler_error('joinery_upsert ' ~ relation ~ ': another run of this model '
        ~ ('committed version ' ~ now.get('joinery.version') ~ ' while this one ran (it read version '
            ~ properties.get('joinery.version') ~ ')' if ours else 'took over the table while this one ran')
        ~ '; nothing was committed by this run (run ' ~ run_id ~ '). Overlapping runs of one model are not'
        ~ ' supported: run it again once the other has finished') }}
{% endmacro %}


{% macro upsert_set_pending(relation_sql, journal) %}
    {% do run_query('alter table ' ~ relation_sql ~ ' set tblproperties ('
        ~ joinery.upsert_chunked_property('joinery.pending', tojson(journal) if journal else '') ~ ')') %}
{% endmacro %}


{% macro upsert_apply_commit(relation, root, journal) %}
    {#- Apply a committing journal. Every step is idempotent, so replaying a journal that was partly
        applied before a crash ends in the same state. -#}
    {% set relation_sql = relation.render() %}
    {% if journal['add_columns'] %}
        {% set present = joinery.upsert_describe(relation_sql)['columns']
            | map(attribute='name') | map('lower') | list %}
        {% set missing = [] %}
        {% for column in journal['add_columns'] if column[0] | lower not in present %}
            {% do missing.append(joinery.quote_identifier(column[0]) ~ ' ' ~ column[1]) %}
        {% endfor %}
        {% if missing %}
            {% do run_query('alter table ' ~ relation_sql ~ ' add columns (' ~ missing | join(', ') ~ ')') %}
        {% endif %}
    {% endif %}
    {% if journal['location'] %}
        {#- The commit of a non-partitioned table: one metastore call. -#}
        {% do run_query('alter table ' ~ relation_sql ~ ' set location '
            ~ joinery.sql_string(journal['location'])) %}
    {% endif %}
    {% for spec, location in journal['set'] %}
        {% do run_query('alter table ' ~ relation_sql ~ ' partition (' ~ spec ~ ') set location '
            ~ joinery.sql_string(location)) %}
    {% endfor %}
    {% if journal['add'] %}
        {% set added = [] %}
        {% for spec, location in journal['add'] %}
            {% do added.append('partition (' ~ spec ~ ') location ' ~ joinery.sql_string(location)) %}
        {% endfor %}
        {% do run_query('alter table ' ~ relation_sql ~ ' add if not exists ' ~ added | join(' ')) %}
    {% endif %}
    {% if journal['drop'] %}
        {% set dropped = [] %}
        {% for spec in journal['drop'] %}
            {% do dropped.append('partition (' ~ spec ~ ')') %}
        {% endfor %}
        {% do run_query('alter table ' ~ relation_sql ~ ' drop if exists ' ~ dropped | join(', ')) %}
    {% endif %}
    {% do joinery.upsert_delete_directories(relation, root, journal['delete']) %}
    {% do run_query('alter table ' ~ relation_sql ~ ' set tblproperties ('
        ~ joinery.upsert_chunked_property('joinery.pending', '') ~ ', '
        ~ joinery.upsert_chunked_property('joinery.garbage', tojson(journal['keep'])) ~ ', '
        ~ joinery.sql_string('joinery.watermark') ~ ' = ' ~ joinery.sql_string(journal.get('watermark', ''))
            ~ ', '
        ~ (joinery.sql_string('joinery.unique_key') ~ ' = ' ~ joinery.sql_string(journal['unique_key']) ~ ', '
            ~ joinery.sql_string('joinery.location_root') ~ ' = ' ~ joinery.sql_string(journal['location_root']) ~ ', '
            if journal.get('unique_key') else '')
        ~ joinery.sql_string('joinery.version') ~ ' = ' ~ joinery.sql_string(journal['run']) ~ ')') %}
    {#- No `refresh table`: each ALTER above that changes which files the table reads (SET LOCATION,
        ADD or DROP PARTITION) refreshes the session's cached relation and file listing itself (Spark's
        AlterTableSetLocationCommand, AlterTableAddPartitionCommand, AlterTableDropPartitionCommand
        call catalog.refreshTable), and SET TBLPROPERTIES invalidates the cached relation. -#}
{% endmacro %}


{% macro upsert_recover(relation, properties) %}
    {#- Finish or undo what a killed run left: roll a committing journal forward (its data was fully
        written and checked before the journal was stored), delete a half-written directory. -#}
    {% set pending = joinery.upsert_read_chunked_property(properties, 'joinery.pending') %}
    {% if pending == '' %}
        {{ return(false) }}
    {% endif %}
    {% set journal = fromjson(pending) %}
    {% set root = joinery.upsert_qualified_location(relation, properties['joinery.root'], unless_qualified=true) %}
    {% if journal['state'] == 'committing' %}
        {{ log('joinery_upsert: finishing the commit of run ' ~ journal['run'] ~ ' on ' ~ relation
            ~ ', interrupted earlier', info=true) }}
        {% do joinery.upsert_apply_commit(relation, root, journal) %}
    {% else %}
        {{ log('joinery_upsert: removing ' ~ journal['dir'] ~ ', left half-written by an interrupted run on '
            ~ relation, info=true) }}
        {% do joinery.upsert_delete_directories(relation, root, [journal['dir']]) %}
        {% do joinery.upsert_set_pending(relation.render(), none) %}
    {% endif %}
    {{ return(true) }}
{% endmacro %}
