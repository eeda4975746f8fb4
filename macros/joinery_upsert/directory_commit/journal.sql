{#- The journal of joinery_upsert's commit on parquet, orc and Hive SerDe tables, and the one writer
    of joinery's own table properties (docs/upsert.md walks through why each step is crash safe).
    Properties: `joinery.root` (where versions live, qualified), `joinery.unique_key`,
    `joinery.location_root`, `joinery.options` (as the table was built), `joinery.version` (the run
    id of the last commit), `joinery.costs` (the times of its last full build and incremental run,
    contract/build_mode.sql), `joinery.note` (the last commit's note, contract/table_state.sql: the
    watermark a capability continues from), `joinery.runs` (the notes of the last commits, newest
    first: the run records joinery.run_history reads), `joinery.garbage` (directories superseded by
    the last commit) and `joinery.pending`, the journal. A commit is described by a journal stored before
    any of it is applied, so a run killed halfway through a multi-step commit is finished by the
    next run (_upsert_recover) instead of leaving it half applied:
      {"run": id, "state": "committing", "location": new table location or none,
       "add_columns": [[name, type]], "set": [[spec, location]], "add": [[spec, location]],
       "drop": [spec], "delete": [directories to delete now], "keep": [superseded directories kept
       as the previous version, deleted by the next commit], "unique_key", "location_root", "costs",
       "note", "runs": the properties the commit stores with it}
    A journal in state "writing" ({"run", "state": "writing", "dir"}) marks a version directory
    being written; a run killed then leaves a directory that the next run deletes. -#}

{% macro _upsert_properties_sql(values) %}
    {#- The `'joinery.<name>' = '<value>', ...` list of a `create table ... tblproperties (...)` or
        `alter table ... set tblproperties (...)`: every joinery property is written through here.
        `values`: {name: value}; `pending` (a journal, none to clear) and `garbage` (a list) are
        stored as JSON in parts (_upsert_chunked_property), `runs` (text) in parts, the others as
        strings. -#}
    {% set plain = ['root', 'unique_key', 'location_root', 'options', 'version', 'costs', 'note'] %}
    {% set parts = [] %}
    {% for name, value in values | dictsort %}
        {% if name == 'pending' %}
            {% do parts.append(joinery._upsert_chunked_property('joinery.pending', tojson(value) if value else '')) %}
        {% elif name == 'garbage' %}
            {% do parts.append(joinery._upsert_chunked_property('joinery.garbage', tojson(value))) %}
        {% elif name == 'runs' and value is string %}
            {% do parts.append(joinery._upsert_chunked_property('joinery.runs', value)) %}
        {% elif name in plain and value is string %}
            {% do parts.append(joinery._sql_string('joinery.' ~ name) ~ ' = ' ~ joinery._sql_string(value)) %}
        {% else %}
            {{ joinery._upsert_fail('no joinery table property ' ~ name ~ ' of value ' ~ tojson(value)) }}
        {% endif %}
    {% endfor %}
    {{ return(parts | join(', ')) }}
{% endmacro %}


{% macro _upsert_write_properties(relation_sql, values) %}
    {#- Set joinery properties (_upsert_properties_sql) in one statement, one metastore call, so they
        change together. -#}
    {% do run_query('alter table ' ~ relation_sql ~ ' set tblproperties (' ~ joinery._upsert_properties_sql(values)
        ~ ')') %}
{% endmacro %}


{% macro _upsert_chunked_property(name, value) %}
    {#- `name` = value as a `set tblproperties` list, split over `name`, `name.1`, `name.2`, ... of at
        most 4000 characters each, then an empty `name.<n>` that ends it. The Hive metastore keeps a
        property value in a VARCHAR column (32672 characters in Spark's built-in Derby metastore,
        4000 in the Hive 2 schemas of some databases), and the journal of a commit that rewrites
        hundreds of partitions is longer than that. -#}
    {% set size = 4000 %}
    {% set text = value | string %}
    {% set parts = [joinery._sql_string(name) ~ ' = ' ~ joinery._sql_string(text[:size])] %}
    {% for start in range(size, text | length, size) %}
        {% do parts.append(joinery._sql_string(name ~ '.' ~ loop.index) ~ ' = '
            ~ joinery._sql_string(text[start:start + size])) %}
    {% endfor %}
    {% if text != '' %}
        {% do parts.append(joinery._sql_string(name ~ '.' ~ parts | length) ~ " = ''") %}
    {% endif %}
    {{ return(parts | join(', ')) }}
{% endmacro %}


{% macro _upsert_stored_journal(properties) %}
    {#- {'pending': the stored journal or none, 'garbage': the directories the last commit superseded}. -#}
    {% set pending = joinery._upsert_read_chunked_property(properties, 'joinery.pending') %}
    {{ return({'pending': fromjson(pending) if pending != '' else none,
        'garbage': fromjson(joinery._upsert_read_chunked_property(properties, 'joinery.garbage') or '[]')}) }}
{% endmacro %}


{% macro _upsert_set_pending(relation_sql, journal) %}
    {% do joinery._upsert_write_properties(relation_sql, {'pending': journal}) %}
{% endmacro %}


{% macro _upsert_options_text(settings) %}
    {#- The options a Hive SerDe table is built with, as stored in `joinery.options`: keys in lower
        case (Spark reads them so) and sorted, and the fileFormat's name in lower case. '' for other
        formats, whose options (compression, ...) do not change what reads their files. -#}
    {% if settings.file_format != 'hive' %}
        {{ return('') }}
    {% endif %}
    {% set normalized = {} %}
    {% for key, value in settings.options.items() %}
        {% do normalized.update({key | lower: value | lower if key | lower == 'fileformat' else value}) %}
    {% endfor %}
    {{ return(tojson(normalized, sort_keys=true)) }}
{% endmacro %}


{% macro _upsert_check_no_overlap(relation, root, properties, run_id, version_dir, changes) %}
    {#- Just before a commit: fail, committing nothing, if another run of the model (an overlapping
        invocation, e.g. a slow run and the next scheduled one) committed since this run read the
        table, or took over the pending journal: this run's version was computed from the table as
        it read it. The other run may still be between this check and its own commit, so this
        narrows the window rather than closing it. If the journal is still this run's, its directory
        is deleted and the journal cleared, as recovery would. -#}
    {% set now = joinery._table_properties(relation.render()) %}
    {% set pending = joinery._upsert_stored_journal(now).pending %}
    {% set ours = pending is not none and pending.get('run') == run_id %}
    {% if ours and now.get('joinery.version') == properties.get('joinery.version') %}
        {{ return(none) }}
    {% endif %}
    {% if ours %}
        {% do joinery._upsert_delete_directories(relation, root, [version_dir]) %}
        {% do joinery._upsert_set_pending(relation.render(), none) %}
    {% endif %}
    {{ joinery._upsert_fail('another run of this model '
        ~ ('committed version ' ~ now.get('joinery.version') ~ ' while this one ran (it read version '
            ~ properties.get('joinery.version') ~ ')' if ours else 'took over the table while this one ran')
        ~ '; nothing was committed to ' ~ relation ~ ' by this run (run ' ~ run_id ~ '). Overlapping runs of '
        ~ 'one model are not supported: run it again once the other has finished', changes) }}
{% endmacro %}


{% macro _upsert_apply_commit(relation, root, journal) %}
    {#- Apply a committing journal, then clear it and store what the commit stores, in one
        statement. Every step is idempotent, so replaying a journal that was partly applied before a
        crash ends in the same state. No `refresh table`: each ALTER that changes which files the
        table reads (SET LOCATION, ADD or DROP PARTITION) refreshes the session's cached relation
        and file listing itself, and SET TBLPROPERTIES invalidates the cached relation. -#}
    {% set relation_sql = relation.render() %}
    {% do joinery._upsert_commit_add_columns(relation_sql, journal['add_columns']) %}
    {% do joinery._upsert_commit_locations(relation_sql, journal) %}
    {% do joinery._upsert_delete_directories(relation, root, journal['delete']) %}
    {% set values = {'pending': none, 'garbage': journal['keep'],
        'unique_key': journal['unique_key'], 'costs': journal.get('costs') or '{}', 'note': journal.get('note') or '',
        'location_root': journal['location_root'], 'version': journal['run']} %}
    {% if journal.get('runs') is string %}
        {% do values.update({'runs': journal['runs']}) %}
    {% endif %}
    {% do joinery._upsert_write_properties(relation_sql, values) %}
{% endmacro %}


{% macro _upsert_run_records(properties, note, keep=20) %}
    {#- The `joinery.runs` a commit stores: its `note` before the notes of the last commits (at most
        `keep`, `;` apart: a note holds no semicolon), so that a parquet, orc or Hive table keeps the
        records of its last runs as delta's and iceberg's commits keep theirs, in the commit's own
        metastore call. -#}
    {% set earlier = joinery._upsert_read_chunked_property(properties, 'joinery.runs') %}
    {% set notes = [note] + (earlier.split(';') if earlier else []) %}
    {{ return(notes[:keep] | join(';')) }}
{% endmacro %}


{% macro _upsert_commit_add_columns(relation_sql, add_columns) %}
    {#- Add the journal's new columns that the table does not have yet. -#}
    {% if not add_columns %}
        {{ return(none) }}
    {% endif %}
    {% set present = joinery._describe_relation(relation_sql)['columns'] | map(attribute='name')
        | map('lower') | list %}
    {% set missing = [] %}
    {% for column in add_columns if column[0] | lower not in present %}
        {% do missing.append(joinery._quote_identifier(column[0]) ~ ' ' ~ column[1]) %}
    {% endfor %}
    {% if missing %}
        {% do run_query('alter table ' ~ relation_sql ~ ' add columns (' ~ missing | join(', ') ~ ')') %}
    {% endif %}
{% endmacro %}


{% macro _upsert_commit_locations(relation_sql, journal) %}
    {#- Point the table at the new version: one `set location` (unpartitioned), or a `set location`
        per rewritten partition, one `add if not exists` and one `drop if exists` statement. -#}
    {% if journal['location'] %}
        {% do run_query('alter table ' ~ relation_sql ~ ' set location ' ~ joinery._sql_string(journal['location'])) %}
    {% endif %}
    {% for spec, location in journal['set'] %}
        {% do run_query('alter table ' ~ relation_sql ~ ' partition (' ~ spec ~ ') set location '
            ~ joinery._sql_string(location)) %}
    {% endfor %}
    {% set added = [] %}
    {% for spec, location in journal['add'] %}
        {% do added.append('partition (' ~ spec ~ ') location ' ~ joinery._sql_string(location)) %}
    {% endfor %}
    {% if added %}
        {% do run_query('alter table ' ~ relation_sql ~ ' add if not exists ' ~ added | join(' ')) %}
    {% endif %}
    {% set dropped = [] %}
    {% for spec in journal['drop'] %}
        {% do dropped.append('partition (' ~ spec ~ ')') %}
    {% endfor %}
    {% if dropped %}
        {% do run_query('alter table ' ~ relation_sql ~ ' drop if exists ' ~ dropped | join(', ')) %}
    {% endif %}
{% endmacro %}


{% macro _upsert_recover(relation, properties) %}
    {#- Finish or undo what a killed run left: roll a committing journal forward (its data was fully
        written and checked before the journal was stored), delete a half-written directory. True
        when there was something to do. -#}
    {% set journal = joinery._upsert_stored_journal(properties).pending %}
    {% if journal is none %}
        {{ return(false) }}
    {% endif %}
    {% set root = properties['joinery.root'] %}
    {% if journal['state'] == 'committing' %}
        {{ log('joinery_upsert: finishing the commit of run ' ~ journal['run'] ~ ' on ' ~ relation
            ~ ', interrupted earlier', info=true) }}
        {% do joinery._upsert_apply_commit(relation, root, journal) %}
    {% else %}
        {{ log('joinery_upsert: removing ' ~ journal['dir'] ~ ', left half-written by an interrupted run on '
            ~ relation, info=true) }}
        {% do joinery._upsert_delete_directories(relation, root, [journal['dir']]) %}
        {% do joinery._upsert_set_pending(relation.render(), none) %}
    {% endif %}
    {{ return(true) }}
{% endmacro %}


{% macro _upsert_journal(target, table, version, facts, recreate) %}
    {#- The committing journal of a checked version: the new location (unpartitioned) or each
        partition to set, add or drop; the directories the previous commit superseded (`delete`);
        and those this commit supersedes (`keep`), by the table's partitioning as it was: a full
        refresh that partitions an unpartitioned table, or the reverse, supersedes the other layout's
        files. Only this table's own version directories are ever listed. -#}
    {% set journal = {'run': table.run_id, 'state': 'committing', 'location': none,
        'add_columns': version.plan.add_columns, 'unique_key': table.unique_key, 'location_root': table.location_root,
        'costs': table.costs, 'note': table.get('note'), 'runs': table.get('runs'),
        'set': [], 'add': [], 'drop': [], 'keep': [],
        'delete': joinery._upsert_stored_journal(table.properties).garbage if table.managed else []} %}
    {% if version.partitioned %}
        {% for spec, location in facts.produced | dictsort %}
            {% set step = 'set' if spec in facts.existing_partitions and not recreate else 'add' %}
            {% do journal[step].append([spec, location]) %}
        {% endfor %}
        {% for spec in facts.existing_partitions if spec not in facts.produced and not recreate %}
            {% do journal['drop'].append(spec) %}
        {% endfor %}
    {% else %}
        {% do journal.update({'location': version.dir}) %}
    {% endif %}
    {% set superseded = [] %}
    {% if table.managed and version.plan.target_partition_columns and table.full_build %}
        {#- A full build supersedes every partition, so whole version directories: no metastore call
            per partition to find each one's location, and their deletion goes in bulk. -#}
        {% for name in facts.existing_versions if table.root ~ '/' ~ name != version.dir %}
            {% do superseded.append(table.root ~ '/' ~ name) %}
        {% endfor %}
    {% elif table.managed and version.plan.target_partition_columns %}
        {% for spec in facts.existing_partitions %}
            {% do superseded.append(joinery._upsert_partition_location(target.render(), spec)) %}
        {% endfor %}
    {% elif table.managed %}
        {% do superseded.append(version.target_location) %}
    {% endif %}
    {% for path in superseded if joinery._upsert_is_version_directory(table.root, path) %}
        {% do journal['keep'].append(path) %}
    {% endfor %}
    {{ return(journal) }}
{% endmacro %}


{% macro _upsert_commit(target, existing, table, version, journal, recreate, settings) %}
    {#- Commit a checked version. On an existing definition: store the journal, then apply it. A new
        definition (no table yet, a table joinery did not build, or a full refresh that changes more
        than added columns): drop the old one only now that the new data is written (external
        tables keep their files; a former managed table's files go with it), then create the table
        with every joinery property, the journal included when partitions are still to be added. -#}
    {% set target_sql = target.render() %}
    {% if existing is not none and not recreate %}
        {% do joinery._upsert_set_pending(target_sql, journal) %}
        {% do joinery._upsert_apply_commit(target, table.root, journal) %}
        {{ return(none) }}
    {% endif %}
    {% if recreate %}
        {% do adapter.drop_relation(existing) %}
    {% endif %}
    {% do run_query('create table ' ~ target_sql
        ~ ' (\n    ' ~ joinery._upsert_column_ddl(version.plan.columns) ~ '\n)\n'
        ~ joinery._upsert_storage_clause(settings) ~ '\nlocation '
        ~ joinery._sql_string(table.root if version.partitioned else version.dir) ~ '\ntblproperties ('
        ~ joinery._upsert_properties_sql({'root': table.root, 'unique_key': table.unique_key,
            'location_root': table.location_root, 'options': table.options,
            'pending': journal if version.partitioned else none, 'garbage': journal['keep'] + journal['delete'],
            'version': table.run_id, 'costs': table.costs, 'note': table.get('note') or '',
            'runs': table.get('runs') or ''}) ~ ')') %}
    {% if version.partitioned %}
        {#- The definition holds no partition yet: add them, deleting nothing (the garbage waits). -#}
        {% do journal.update({'add_columns': [], 'keep': journal['keep'] + journal['delete'], 'delete': []}) %}
        {% do joinery._upsert_apply_commit(target, table.root, journal) %}
    {% endif %}
{% endmacro %}
